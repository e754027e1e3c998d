"""Check: what code can verify of a note draft before it is published.

Structure (a title, a summary, blocks with unique well-formed keys), and citation identities:
every claim rests on a block of its note and has evidence, and every piece of evidence quotes a
block of the unit's own window, on the page that block is on. A quote is compared with the
block's text with whitespace and hyphenation normalised (``contains``): a model retypes a passage
with line breaks and the printed "imple- mented" where the block reads "implemented", and neither
changes what it says, while any changed word still fails. ``pipeline.answering.citations`` locates
quotes fuzzily, ignoring case and punctuation, which is right for highlighting a chat citation but
too loose to tell whether a note quotes its source.

Problems are short stable strings naming the claim or block at fault, shown to the reader as the
unit's coverage note.
"""
from __future__ import annotations

import regex

from pipeline.knowledge.types import CheckResult, NoteDraft, ParsedDocument, UnitPlan

_BLOCK_KEY = regex.compile(r"^b[1-9]\d*$")
# A hyphen between letters, with or without a line break after it ("imple-\nmented",
# "type-specialized"): dropped on both sides, since the block joins a broken word and a quote
# may keep the printed hyphen.
_HYPHEN = regex.compile(r"(?<=\p{L})[-\u00ad\u2010]\s*(?=\p{L})")
_SPACES = regex.compile(r"\s+")


def normalised(text: str) -> str:
    """``text`` with hyphenation undone and every run of whitespace one space."""
    return _SPACES.sub(" ", _HYPHEN.sub("", text.replace("\u00ad", ""))).strip()


def contains(text: str, snippet: str) -> bool:
    """Whether ``snippet`` is a passage of ``text``, whitespace and hyphenation aside."""
    needle = normalised(snippet)
    return bool(needle) and needle in normalised(text)


def check_draft(document: ParsedDocument, plan: UnitPlan, draft: NoteDraft) -> CheckResult:
    """The code checks of ``draft``, written for ``plan`` of ``document``."""
    problems: list[str] = []
    if not draft.title.strip():
        problems.append("title is empty")
    if not draft.summary.strip():
        problems.append("summary is empty")
    if not draft.blocks:
        problems.append("note has no blocks")
    keys = [block.key for block in draft.blocks]
    for key in sorted(set(keys)):
        if keys.count(key) > 1:
            problems.append(f"{key}: block key is not unique")
    problems += [f"{key}: block key is not b1, b2, …" for key in keys if not _BLOCK_KEY.match(key)]
    problems += [f"{block.key}: block is empty" for block in draft.blocks if not block.text.strip()]
    claims = {claim.key for claim in draft.claims}
    cited = {evidence.claim_key for evidence in draft.evidence}
    for claim in draft.claims:
        if claim.block_key not in keys:
            problems.append(f"{claim.key}: block {claim.block_key} does not exist")
        if claim.key not in cited:
            problems.append(f"{claim.key}: claim has no evidence")
    blocks = {block.ordinal: block for block in document.blocks}
    window = set(plan.block_ordinals)
    for evidence in draft.evidence:
        name = evidence.claim_key
        if evidence.claim_key not in claims:
            problems.append(f"{name}: evidence names no claim")
        if evidence.block_key not in keys:
            problems.append(f"{name}: evidence names block {evidence.block_key}, which does not exist")
        block = blocks.get(evidence.block_ordinal)
        if block is None or evidence.block_ordinal not in window:
            problems.append(f"{name}: evidence is outside the unit (block {evidence.block_ordinal})")
            continue
        if evidence.page != block.page:
            problems.append(f"{name}: evidence is not on page {evidence.page}")
        if not contains(block.text, evidence.snippet):
            problems.append(f"{name}: snippet is not in block {evidence.block_ordinal}")
    problems += [f"image {key} is not in the unit" for key in draft.images if key not in plan.asset_keys]
    return CheckResult(plan.key, tuple(problems), None)
