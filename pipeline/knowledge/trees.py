"""Knowledge trees: an arrangement of groups and concept references (the seed's 知识体系).

A tree is nodes in order, each ``{"key", "parent", "kind": "group" | "concept", "title",
"concept_id"}``; a snapshot pins each concept node to one concept version. The same concept may
sit in several trees, and in several places of one; its identity is the concept's, never the
node's. ``checked_nodes`` is what code accepts of a tree someone sends: keys unique, every parent
an earlier group, a concept node naming a concept, a group naming none.
"""
from __future__ import annotations

from typing import Any

MAX_NODES = 500
MAX_TITLE_CHARS = 300
KINDS = ("group", "concept")


class TreeError(ValueError):
    """What is wrong with a tree, in one sentence."""


def checked_nodes(nodes: Any) -> list[dict[str, Any]]:
    """``nodes`` as stored (without concept versions: the snapshot pins those)."""
    if not isinstance(nodes, list) or len(nodes) > MAX_NODES:
        raise TreeError(f"nodes must be a list of at most {MAX_NODES} nodes")
    seen: dict[str, str] = {}
    kept = []
    for position, node in enumerate(nodes, start=1):
        if not isinstance(node, dict) or set(node) - {"key", "parent", "kind", "title", "concept_id"}:
            raise TreeError(f"node {position} must be an object of key, parent, kind, title and concept_id")
        key, parent, kind = node.get("key"), node.get("parent"), node.get("kind")
        title, concept_id = node.get("title") or "", node.get("concept_id")
        if not isinstance(key, str) or not 0 < len(key) <= 40 or key in seen:
            raise TreeError(f"node {position} needs a key of its own (1 to 40 characters)")
        if kind not in KINDS:
            raise TreeError(f"node {position}'s kind must be one of: {', '.join(KINDS)}")
        if parent is not None and (not isinstance(parent, str) or seen.get(parent) != "group"):
            raise TreeError(f"node {position}'s parent must be a group that comes before it")
        if not isinstance(title, str) or len(title) > MAX_TITLE_CHARS or (kind == "group" and not title.strip()):
            raise TreeError(f"node {position} needs a title of at most {MAX_TITLE_CHARS} characters (a group, one not blank)")
        if (kind == "concept" and not isinstance(concept_id, str)) or (kind == "group" and concept_id is not None):
            raise TreeError(f"node {position}: a concept node names a concept_id, a group none")
        seen[key] = kind
        kept.append({"key": key, "parent": parent, "kind": kind, "title": title.strip(), "concept_id": concept_id})
    return kept


def pinned(nodes: list[dict[str, Any]], versions: dict[str, str | None]) -> list[dict[str, Any]]:
    """``nodes`` with each concept node pinned to its concept's active version (``versions``)."""
    return [{**node, "concept_version_id": versions.get(node["concept_id"])} if node["kind"] == "concept" else node
            for node in nodes]
