"""What an analysis reads and writes at each level: passages in, summaries of cited points out."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# What a person may ask for by name; anything else is a free-text instruction.
KINDS = ("summary", "briefing", "study_guide", "faq", "timeline", "disagreements")


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


@dataclass(frozen=True)
class Point:
    """One claim of a summary and the chunks it rests on; the offline engine's text is a sentence
    quoted exactly from its one chunk. ``order`` keeps where it came from (a source's reading order)."""

    text: str
    chunk_ids: tuple[str, ...]
    resource_id: str
    score: float = 0.0
    order: tuple[int, int] = (0, 0)

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "chunk_ids": list(self.chunk_ids), "resource_id": self.resource_id,
                "score": self.score, "order": list(self.order)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Point":
        order = data.get("order") or (0, 0)
        return cls(data["text"], tuple(data["chunk_ids"]), data["resource_id"], data.get("score", 0.0), (order[0], order[1]))


@dataclass(frozen=True)
class Summary:
    """A step's output: its points, best first, and every chunk its inputs covered."""

    points: list[Point]
    covers: tuple[str, ...]
