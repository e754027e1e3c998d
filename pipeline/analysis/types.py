"""What an analysis reads and writes at each level: passages in, summaries of cited points out."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

# What a person may ask for by name; anything else is a free-text instruction.
KINDS = ("summary", "briefing", "study_guide", "faq", "timeline", "disagreements")
MAX_INSTRUCTION_CHARS = 2000


@dataclass(frozen=True)
class Focus:
    """What the analysis is for: a kind, and the person's own words (either may be empty)."""

    kind: str = "summary"
    instruction: str = ""


@dataclass(frozen=True)
class Passage:
    """A map step's input: one chunk of the pinned revision, in its source's order (``ordinal``)."""

    chunk_id: str
    resource_id: str
    text: str
    ordinal: int = 0
    locator: dict[str, Any] = field(default_factory=dict)
    title: str = ""


@dataclass(frozen=True)
class Point:
    """One claim of a summary and the chunks it rests on. ``quotes`` holds, for each chunk, the
    exact passage of it that supports the claim; empty when the text itself is that passage (the
    offline engine quotes one sentence of its one chunk). ``order`` keeps where it came from (a
    source's reading order)."""

    text: str
    chunk_ids: tuple[str, ...]
    resource_id: str
    score: float = 0.0
    order: tuple[int, int] = (0, 0)
    quotes: tuple[str, ...] = ()

    def quote_of(self, position: int) -> str:
        """The passage of ``chunk_ids[position]`` that supports the claim."""
        return self.quotes[position] if self.quotes else self.text

    def to_dict(self) -> dict[str, Any]:
        shown = {"text": self.text, "chunk_ids": list(self.chunk_ids), "resource_id": self.resource_id,
                 "score": self.score, "order": list(self.order)}
        return {**shown, "quotes": list(self.quotes)} if self.quotes else shown

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Point":
        order = data.get("order") or (0, 0)
        return cls(data["text"], tuple(data["chunk_ids"]), data["resource_id"], data.get("score", 0.0),
                   (order[0], order[1]), tuple(data.get("quotes") or ()))


@dataclass(frozen=True)
class Summary:
    """A step's output: its points, best first, and every chunk its inputs covered."""

    points: list[Point]
    covers: tuple[str, ...]


class AnalysisEngine(Protocol):
    """Writes one step: ``map`` a batch of passages, ``reduce`` the summaries of a level below;
    each returns at most ``points`` points, every one citing chunks of its inputs only."""

    name: str

    def map(self, passages: list[Passage], focus: Focus, points: int) -> list[Point]: ...

    def reduce(self, summaries: list[Summary], focus: Focus, points: int) -> list[Point]: ...
