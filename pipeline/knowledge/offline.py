"""The offline note writer: no model, deterministic, every claim a sentence of the unit's own text.

A note is written from its unit's window only: the window's blocks become the note's blocks, the
heading its title, and its key sentences its claims, chosen as the offline analysis engine
chooses the points of a batch (``pipeline.analysis.offline.map_batch``): each sentence of the
unit is a passage, so a term weighs by how many of the unit's sentences share it (what the unit
keeps coming back to), definitions ("X is a …") weigh more (the study-guide cue), and captions,
table-of-contents lines, fragments and near-repeats are never chosen. The best of them is the
summary. Each claim is its own evidence: the sentence, exactly as its block holds it.
"""
from __future__ import annotations

from pipeline.analysis.offline import OfflineSettings, map_batch, whole_sentences
from pipeline.analysis.types import Focus, Passage
from pipeline.answering.sentences import sentence_spans
from pipeline.knowledge.plan import short_phrase
from pipeline.knowledge.types import Block, Claim, Evidence, NoteBlock, NoteDraft, ParsedDocument, UnitPlan

MAX_CLAIMS = 5
# Kinds whose sentences may be claims: code, formulas and captions say nothing on their own.
_CLAIM_KINDS = ("paragraph", "list", "table")
# The study guide's cue favours definitions ("X is a …"), what a note should keep of a unit.
_FOCUS_KIND = "study_guide"


class OfflineNoteWriter:
    """A ``NoteWriter`` that quotes: its notes need no judge, their claims are the document's own."""

    name = "offline"

    def __init__(self, claims: int = MAX_CLAIMS, settings: OfflineSettings = OfflineSettings()) -> None:
        self.claims = claims
        self.settings = settings

    def write(self, document: ParsedDocument, plan: UnitPlan) -> NoteDraft:
        by_ordinal = {block.ordinal: block for block in document.blocks}
        window = [by_ordinal[ordinal] for ordinal in plan.block_ordinals]
        body = [block for block in window if block.kind != "heading"]
        keys = [f"b{index}" for index in range(1, len(body) + 1)]
        chosen = self._key_sentences(body, plan)
        first = _first_sentence(body)
        if not chosen and first and body[first[0]].kind in _CLAIM_KINDS:
            chosen = [first]
        lead = chosen[0] if chosen else first
        claims: list[Claim] = []
        evidence: list[Evidence] = []
        for number, (index, start, end) in enumerate(sorted(chosen), start=1):
            block, text = body[index], _quoted(body, (index, start, end))
            claims.append(Claim(f"c{number}", text, keys[index]))
            evidence.append(Evidence(f"c{number}", keys[index], block.ordinal, block.page, document.page_label(block.page), text))
        # A window holding a heading is that section (the plan titles it, even where a few short
        # lines before it, such as a footnote, were merged in); one cut from a longer section
        # goes on from the part before, and is named by what it says first.
        titled = any(block.kind == "heading" for block in window)
        title = plan.title if titled else short_phrase(_quoted(body, first) if first else plan.title)
        return NoteDraft(
            plan.key, title, _quoted(body, lead) if lead else plan.title,
            [NoteBlock(key, block.kind, block.text) for key, block in zip(keys, body)],
            claims, evidence, list(plan.asset_keys),
        )

    def judge(self, document: ParsedDocument, plan: UnitPlan, draft: NoteDraft) -> tuple[str, ...]:
        return ()

    def _key_sentences(self, body: list[Block], plan: UnitPlan) -> list[tuple[int, int, int]]:
        """The unit's key sentences as (body index, start, end), the most central first."""
        spans = [
            (index, start, end)
            for index, block in enumerate(body) if block.kind in _CLAIM_KINDS
            for start, end in whole_sentences(block.text)
        ]
        passages = [
            Passage(str(number), plan.key, body[index].text[start:end], number)
            for number, (index, start, end) in enumerate(spans)
        ]
        points = map_batch(passages, Focus(_FOCUS_KIND, plan.title), self.claims, self.settings).points
        return [spans[int(point.chunk_ids[0])] for point in points]


def _first_sentence(body: list[Block]) -> tuple[int, int, int] | None:
    """The first sentence of the first block that has one, claim kinds first and whole sentences
    of them only (the summary when no sentence is a key one: a unit of code, or of sentences too
    short to stand alone)."""
    ordered = sorted(range(len(body)), key=lambda index: (body[index].kind not in _CLAIM_KINDS, index))
    for index in ordered:
        text = body[index].text
        spans = whole_sentences(text) if body[index].kind in _CLAIM_KINDS else sentence_spans(text)
        if spans:
            return index, spans[0][0], spans[0][1]
    return None


def _quoted(body: list[Block], span: tuple[int, int, int]) -> str:
    index, start, end = span
    return body[index].text[start:end]
