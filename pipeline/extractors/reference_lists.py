"""A paper's reference list, marked so that an answer does not quote it as a claim.

"[12] Meyers, A. et al. 2001. Covering treebanks with GLARF." is a line the search should still
find (a question may ask what a paper cites), but quoted as the answer to a question about GLARF
it would pass a bibliography entry off as a statement of the source. Everything from the
document's last reference-list heading ("References", "Bibliography", "Literatur", ...) on is
marked with ``"section": "references"`` in its locator, up to an appendix heading if one follows.
"""
from __future__ import annotations

import re

from pipeline.types import Segment

REFERENCES = "references"
_HEADING = re.compile(
    r"^\s*(?:[0-9IVX]+\.?\s+)?(?:references|bibliography|works cited|literature cited|literatur|"
    r"literaturverzeichnis|quellenverzeichnis|références|bibliographie|bibliografía|referencias)\s*$",
    re.IGNORECASE,
)
_APPENDIX = re.compile(r"^\s*(?:[A-Z]\.?\s+)?(?:appendix|appendices|anhang|annexe?)\b", re.IGNORECASE)


def mark_reference_lists(segments: list[Segment]) -> list[Segment]:
    """``segments`` in document order, the reference list's part of each marked (a page where the
    list starts is split at its heading: the text above it stays unmarked)."""
    start = _last_heading(segments)
    if start is None:
        return segments
    first, line = start
    marked = list(segments[:first])
    inside = True
    for index in range(first, len(segments)):
        lines = segments[index].text.split("\n")
        begin = line if index == first else 0
        if index == first and begin:
            marked.append(Segment("\n".join(lines[:begin]).strip(), segments[index].locator))
        part: list[str] = []
        for text in lines[begin:]:
            if inside and _APPENDIX.match(text):
                marked.extend(_segments(part, segments[index].locator, True))
                part, inside = [], False
            part.append(text)
        marked.extend(_segments(part, segments[index].locator, inside))
    return [segment for segment in marked if segment.text]


def _last_heading(segments: list[Segment]) -> tuple[int, int] | None:
    for index in range(len(segments) - 1, -1, -1):
        lines = segments[index].text.split("\n")
        for line in range(len(lines) - 1, -1, -1):
            if _HEADING.match(lines[line]):
                return index, line
    return None


def _segments(lines: list[str], locator: dict[str, object], references: bool) -> list[Segment]:
    text = "\n".join(lines).strip()
    return [Segment(text, {**locator, "section": REFERENCES} if references else dict(locator))] if text else []
