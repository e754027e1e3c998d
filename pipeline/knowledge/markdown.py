"""The Markdown export of a source note: its table of contents with each atomic note under it.

Written after a publish as a plain file a person can read, grep or keep in their own notes: each
position of the table of contents is a heading at its level, each note its summary, its blocks
(code and formulas fenced, so that their line breaks and symbols survive), and its claims, each
with the pages its evidence is on, by printed label where the document prints another one.
"""
from __future__ import annotations

from typing import Any

_FENCED = ("code", "formula")


def source_note_markdown(title: str, entries: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    """The source note ``title`` with its ``entries``: (table-of-contents position, note version)."""
    parts = [f"# {_line(title)}"]
    for position, version in entries:
        level = min(max(int(position.get("level") or 1), 1) + 1, 6)
        parts.append(f"{'#' * level} {_line(position.get('title') or version.get('title') or '')}")
        if version.get("summary"):
            parts.append(f"_{_line(version['summary'])}_")
        parts.extend(_block(block) for block in version.get("blocks") or [] if block.get("text", "").strip())
        claims = version.get("claims") or []
        if claims:
            evidence = version.get("evidence") or []
            parts.append("**Claims**")
            parts.append("\n".join(f"- {_line(claim['text'])}{_pages(claim['key'], evidence)}" for claim in claims))
    return "\n\n".join(parts) + "\n"


def page_reference(page: int, label: str | None) -> str:
    """"p. 3", or "p. iii, page 5" where the printed label is not the page's number."""
    return f"p. {label}, page {page}" if label and label != str(page) else f"p. {page}"


def _pages(claim_key: str, evidence: list[dict[str, Any]]) -> str:
    seen: list[str] = []
    for item in evidence:
        if item.get("claim_key") == claim_key and item.get("page") is not None:
            reference = page_reference(int(item["page"]), item.get("page_label"))
            if reference not in seen:
                seen.append(reference)
    return f" ({'; '.join(seen)})" if seen else ""


def _block(block: dict[str, Any]) -> str:
    text = block["text"].strip()
    if block.get("kind") in _FENCED:
        fence = "~~~" if "```" in text else "```"
        return f"{fence}\n{text}\n{fence}"
    if block.get("kind") == "caption":
        return f"*{_line(text)}*"
    return "\n".join(_escaped(line) for line in text.split("\n"))


def _line(text: str) -> str:
    return " ".join(str(text).split())


def _escaped(line: str) -> str:
    """A line of the document's text that Markdown would otherwise read as a heading or rule."""
    stripped = line.strip()
    return "\\" + stripped if stripped.startswith(("#", "---", "===", ">")) else stripped
