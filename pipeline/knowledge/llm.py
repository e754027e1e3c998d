"""The note writer for any OpenAI-compatible chat endpoint (``GNOSI_LLM_*``), and its judge.

One request writes one unit's note from its window: exactly the blocks ``plan.block_ordinals``
names (headings included, as context), nothing else of the document (``prompts.writer_messages``).
The answer is one JSON object (a ```json fence around it is accepted); its claims are kept only
as far as code can check them, as chat drops an invented citation:
- an evidence whose ``ref`` names no block of the window is dropped, and so is one whose quote is
  not a passage of the block it names, whitespace and hyphenation aside (``checks.contains``, the
  check stage's own rule: a changed word fails, where chat's fuzzy ``locate_quote`` would pass it);
- a claim that names no block of its own note, or is left without evidence, is dropped.
A kept evidence carries the block's ordinal, its page and printed label, and as snippet the
passage of the block's own text the quote was found at (located by ``locate_quote``): an exact
substring, not the model's retyping. Keys are the code's, never the model's: body blocks
``b1``…, claims ``c1``….
``last_dropped`` counts what the latest ``write`` dropped.

Both requests are bounded as an analysis step is (``ChatEndpoint.complete``): ``max_tokens``
sized to the window, a character cap on what is read, and one deadline. A transport failure is
``LLM_UNAVAILABLE`` (the task retries it); an answer that is not the JSON asked for, or a note
with no body, is ``LLM_BAD_RESPONSE``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import regex

from pipeline.answering.citations import locate_quote
from pipeline.answering.openai_stream import ChatEndpoint
from pipeline.knowledge import model_json as reply
from pipeline.knowledge.checks import contains
from pipeline.knowledge.prompts import NOTE_BLOCK_KINDS, judge_messages, writer_messages
from pipeline.knowledge.types import Block, Claim, Evidence, NoteBlock, NoteDraft, ParsedDocument, UnitPlan
from pipeline.types import PipelineError

log = logging.getLogger(__name__)

# The punctuation a quote opens and closes with: "(MVP)." ends in ")."
_OPENING = regex.compile(r"[^\p{L}\p{N}\s]*")
_CLOSING = regex.compile(r"[^\p{L}\p{N}\s]*$")
# A note restates its window and quotes it in its claims: about half a token per window
# character, plus room for the JSON around them; the cap keeps one unit within one lease.
_BASE_NOTE_TOKENS = 1024
_MAX_NOTE_TOKENS = 8192
_JUDGE_TOKENS = 800
_UNSAID = "The judge found that the note does not keep to its unit, without saying why."


@dataclass
class Dropped:
    """What the latest ``write`` dropped: evidence naming no window block or quoting words its
    block lacks, and claims naming no block of their note or left without evidence."""

    evidence: int = 0
    claims: int = 0


class LLMNoteWriter:
    """Writes a unit's note with a model and judges notes against their plans (``NoteWriter``)."""

    name = "openai-compatible"

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout: float = 240.0, *, temperature: float = 0.0) -> None:
        self.endpoint = ChatEndpoint.configured(base_url, model, api_key, timeout, temperature)
        self.last_dropped = Dropped()

    def write(self, document: ParsedDocument, plan: UnitPlan) -> NoteDraft:
        """``plan``'s note from its window; a body block the model left empty is skipped, and a
        claim naming it is dropped like one naming no block at all."""
        self.last_dropped = Dropped()
        window = _window(document, plan)
        max_tokens = min(_MAX_NOTE_TOKENS, _BASE_NOTE_TOKENS + sum(len(block.text) for block in window) // 2)
        answer = reply.json_object(self.endpoint.complete(writer_messages(plan, window), max_tokens=max_tokens))
        keys: dict[int, str] = {}  # a written block's position (from 1, as claims name it) -> its key
        blocks: list[NoteBlock] = []
        for position, item in enumerate(reply.listed(answer, "blocks"), start=1):
            if text := reply.text(item, "text"):
                keys[position] = f"b{len(blocks) + 1}"
                kind = item.get("kind") if item.get("kind") in NOTE_BLOCK_KINDS else "paragraph"
                blocks.append(NoteBlock(keys[position], kind, text))
        if not blocks:
            raise PipelineError("LLM_BAD_RESPONSE", "The model wrote a note with no body.")
        claims: list[Claim] = []
        evidence: list[Evidence] = []
        for item in reply.listed(answer, "claims"):
            if (kept := self._claim(item, f"c{len(claims) + 1}", keys, window, document)) is not None:
                claims.append(kept[0])
                evidence.extend(kept[1])
        log.info("note %s: %d blocks and %d claims kept; %d evidence and %d claims dropped", plan.key,
                 len(blocks), len(claims), self.last_dropped.evidence, self.last_dropped.claims)
        return NoteDraft(plan.key, reply.text(answer, "title") or plan.title, reply.text(answer, "summary"), blocks, claims,
                         evidence, list(plan.asset_keys))

    def judge(self, document: ParsedDocument, plan: UnitPlan, draft: NoteDraft) -> tuple[str, ...]:
        """The judge's problems with ``draft`` (``()`` when it keeps to its plan). An answer that
        says "not ok" without a reason still counts: the note is not published unjudged."""
        messages = judge_messages(plan, _window(document, plan), draft)
        answer = reply.json_object(self.endpoint.complete(messages, max_tokens=_JUDGE_TOKENS))
        return reply.verdict(answer, "the note", _UNSAID)

    def _claim(self, item: Any, key: str, blocks: dict[int, str], window: list[Block],
               document: ParsedDocument) -> tuple[Claim, list[Evidence]] | None:
        """The claim ``item`` with its checked evidence, or None (counted) when nothing holds it."""
        block_key = blocks.get(reply.number(item.get("block"))) if isinstance(item, dict) else None
        text = reply.text(item, "text")
        if block_key is None or not text:
            self.last_dropped.claims += 1
            return None
        cited: dict[tuple[int, str], Evidence] = {}
        for entry in reply.listed(item, "evidence"):
            found = _quoted(entry, window)
            if found is None:
                self.last_dropped.evidence += 1
                continue
            block, snippet = found
            cited.setdefault((block.ordinal, snippet), Evidence(
                key, block_key, block.ordinal, block.page, document.page_label(block.page), snippet))
        if not cited:
            self.last_dropped.claims += 1
            return None
        return Claim(key, text, block_key), list(cited.values())


def _window(document: ParsedDocument, plan: UnitPlan) -> list[Block]:
    """The blocks the unit may be written from, in the plan's order: nothing else is ever sent."""
    by_ordinal = {block.ordinal: block for block in document.blocks}
    return [by_ordinal[ordinal] for ordinal in plan.block_ordinals]


def _quoted(entry: Any, window: list[Block]) -> tuple[Block, str] | None:
    """The window block an evidence names and the exact passage of it its quote was found at."""
    ref = reply.number(entry.get("ref")) if isinstance(entry, dict) else None
    quote = reply.text(entry, "quote")
    if ref is None or not 1 <= ref <= len(window) or not quote:
        return None
    block = window[ref - 1]
    span = locate_quote(block.text, quote) if contains(block.text, quote) else None
    return (block, _passage(block.text, quote, span)) if span else None


def _passage(text: str, quote: str, span: tuple[int, int]) -> str:
    """The located passage, widened by the punctuation the quote opens and closes with where the
    block has it too: ``locate_quote`` spans letters and digits only, and a snippet cut before
    "(MVP)." reads as a broken quote."""
    start, end = span
    for char in reversed(_OPENING.match(quote).group()):
        if start == 0 or text[start - 1] != char:
            break
        start -= 1
    for char in _CLOSING.search(quote).group():
        if end == len(text) or text[end] != char:
            break
        end += 1
    return text[start:end]
