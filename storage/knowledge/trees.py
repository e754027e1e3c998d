"""Knowledge trees as rows: an identity and its snapshots, each pinning concept versions.

A tree someone arranges gets a new snapshot per change (``expected_version_id`` guards it as an
edit of a note is guarded); a concept republished by its events gives every tree that shows it a
new snapshot with the same arrangement (``storage.knowledge.concepts``).
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from pipeline.knowledge.trees import TreeError, pinned
from storage.knowledge.concepts import shown_version
from storage.knowledge.numbering import next_number
from storage.models import KnowledgeConcept, KnowledgeTree, KnowledgeTreeVersion, Notebook, in_notebook


def get(session: Session, notebook: Notebook, tree_id: str) -> KnowledgeTree | None:
    return session.scalar(select(KnowledgeTree).where(in_notebook(KnowledgeTree, notebook), KnowledgeTree.id == tree_id))


def of_notebook(session: Session, notebook: Notebook) -> list[KnowledgeTree]:
    query = select(KnowledgeTree).where(in_notebook(KnowledgeTree, notebook))
    return list(session.scalars(query.order_by(KnowledgeTree.created_at, KnowledgeTree.id)))


def create(session: Session, notebook: Notebook, title: str, nodes: list[dict[str, Any]]) -> KnowledgeTree:
    tree = KnowledgeTree(vault_hash=notebook.vault_hash, workspace_id=notebook.workspace_id, notebook_id=notebook.id, title=title)
    session.add(tree)
    session.flush()
    arrange(session, notebook, tree, nodes)
    return tree


def arrange(session: Session, notebook: Notebook, tree: KnowledgeTree, nodes: list[dict[str, Any]]) -> KnowledgeTreeVersion:
    """A new snapshot of ``tree`` with ``nodes`` (checked by ``pipeline.knowledge.trees``), each
    concept node pinned to the version its concept shows (``shown_version``); a concept of another
    notebook is none."""
    wanted = {node["concept_id"] for node in nodes if node["kind"] == "concept"}
    versions = {concept.id: shown_version(concept) for concept in session.scalars(select(KnowledgeConcept).where(
        in_notebook(KnowledgeConcept, notebook), KnowledgeConcept.id.in_(wanted)))}
    if missing := sorted(wanted - set(versions)):
        raise TreeError(f"no concept {missing[0]} in this notebook")
    snapshot = KnowledgeTreeVersion(tree_id=tree.id, number=next_number(
        session, KnowledgeTreeVersion.number, KnowledgeTreeVersion.tree_id == tree.id), nodes=pinned(nodes, versions))
    session.add(snapshot)
    session.flush()
    tree.active_version_id = snapshot.id
    return snapshot
