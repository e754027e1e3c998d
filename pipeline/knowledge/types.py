"""What the knowledge layer reads and writes (issue #20, docs/decisions/0021).

A document is parsed into pages and blocks (``ParsedDocument``), planned into semantic units
(``UnitPlan``), and each unit is written as an atomic note (``NoteDraft``): blocks addressed by
``block_key``, claims, and evidence that ties each claim to a block of the note and to a snippet
of the document's own text on a page. Every object here travels as JSON between stages
(``to_dict``/``from_dict``): stage outputs are stored as they are produced.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

# The stages of a source note, in order (docs/decisions/0021).
STAGES = ("parse", "plan", "write", "check", "publish")


@dataclass(frozen=True)
class Page:
    """A page: ``number`` is physical (1-based, what the viewer opens), ``label`` the printed one."""

    number: int
    label: str | None = None


@dataclass(frozen=True)
class Block:
    """A run of the document's text in reading order. ``ordinal`` is its position in the whole
    document (its identity within a source version); ``box`` is ``[x0, y0, x1, y1]`` as fractions
    of the page when the extractor gave line boxes; ``level`` is a heading's depth (1 = top).
    ``kind`` is heading, paragraph, formula, caption, list, table or code (a formula stays with
    the paragraph that defines its symbols and a caption with its figure's paragraphs: the
    planner's rule, not the parser's)."""

    ordinal: int
    page: int
    kind: str
    text: str
    box: tuple[float, float, float, float] | None = None
    level: int = 0


@dataclass(frozen=True)
class Asset:
    """A figure or table the document shows, found by its caption: where it is and what it says."""

    key: str
    page: int
    kind: str
    caption: str
    box: tuple[float, float, float, float] | None = None


@dataclass
class ParsedDocument:
    title: str
    pages: list[Page]
    blocks: list[Block]
    assets: list[Asset] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ParsedDocument:
        return cls(
            data["title"],
            [Page(**page) for page in data["pages"]],
            [Block(**{**block, "box": _box(block.get("box"))}) for block in data["blocks"]],
            [Asset(**{**asset, "box": _box(asset.get("box"))}) for asset in data.get("assets") or []],
        )

    def page_label(self, number: int) -> str | None:
        return next((page.label for page in self.pages if page.number == number), None)


@dataclass(frozen=True)
class UnitPlan:
    """One knowledge unit to write: its stable ``key`` within the source version ("u001"), a
    working title, where it sits in the document's outline (``path``: the headings above it), and
    the window it may be written from (``block_ordinals``, contiguous) with its figures."""

    key: str
    title: str
    path: tuple[str, ...]
    block_ordinals: tuple[int, ...]
    asset_keys: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UnitPlan:
        return cls(data["key"], data["title"], tuple(data["path"]), tuple(data["block_ordinals"]),
                   tuple(data.get("asset_keys") or ()))


@dataclass(frozen=True)
class NoteBlock:
    """A block of a note's body, addressed by ``key`` ("b1", …) across the note's versions."""

    key: str
    kind: str
    text: str
    human_revised: bool = False


@dataclass(frozen=True)
class Claim:
    key: str
    text: str
    block_key: str


@dataclass(frozen=True)
class Evidence:
    """Ties a claim (and the note block stating it) to the document: ``snippet`` is an exact
    passage of block ``block_ordinal``'s text, on physical page ``page``."""

    claim_key: str
    block_key: str
    block_ordinal: int
    page: int
    page_label: str | None
    snippet: str


@dataclass
class NoteDraft:
    """An atomic note as a writer produced it, before the checks."""

    plan_key: str
    title: str
    summary: str
    blocks: list[NoteBlock]
    claims: list[Claim]
    evidence: list[Evidence]
    images: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NoteDraft:
        return cls(
            data["plan_key"], data["title"], data["summary"],
            [NoteBlock(**block) for block in data["blocks"]],
            [Claim(**claim) for claim in data["claims"]],
            [Evidence(**evidence) for evidence in data["evidence"]],
            list(data.get("images") or []),
        )


@dataclass(frozen=True)
class CheckResult:
    """What the checks found in one draft: ``problems`` by code (structure, citation identities)
    and by the judge (plan fidelity, when a model is configured). A draft with problems is never
    published; the job then ends ``completed_with_warnings`` with them as coverage notes."""

    plan_key: str
    problems: tuple[str, ...] = ()
    judged_by: str | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


class NoteWriter(Protocol):
    """Writes one unit's note from its window only; ``judge`` returns plan-fidelity problems (an
    offline writer has no judge and returns none)."""

    name: str

    def write(self, document: ParsedDocument, plan: UnitPlan) -> NoteDraft: ...

    def judge(self, document: ParsedDocument, plan: UnitPlan, draft: NoteDraft) -> tuple[str, ...]: ...


def _box(value: Any) -> tuple[float, float, float, float] | None:
    return tuple(value) if value else None  # type: ignore[return-value]
