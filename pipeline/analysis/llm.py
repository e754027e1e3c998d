"""The analysis engine for any OpenAI-compatible chat endpoint (``GNOSI_LLM_*``).

One request per step (``prompts.step_messages``); the answer's points are kept only as far as
they are grounded in the step's own inputs:
- a marker naming no input of this step (an invented ``ref``, or any chunk id: inputs are
  numbered, their ids never shown) is dropped;
- every cited input is checked down to the chunk passages it carries (a map input: its chunk's
  text; a reduce input: the exact passages its point quoted), never against the wording of a
  lower step: a chunk whose passage does not support the claim
  (``pipeline.answering.citations.supports``, chat's lexical check) is not cited;
- a point left without a cited chunk is dropped, and so is one longer than a sentence may be
  (``MAX_SENTENCE_CHARS``: what keeps a reduce batch within its bounds).
A kept point cites at most ``MAX_POINT_CHUNKS`` chunks, each with the passage of it that supports
the claim (``best_quote``, an exact substring of the chunk). Reference-list passages are never
sent: they say what a source cites, not what is true.

The answer is bounded: ``max_tokens`` for the points asked, a character cap on what is read, and
one deadline for the whole request (a server that streams forever is cut off). A model that wrote
lines but no usable point is ``LLM_BAD_RESPONSE``: a step with nothing grounded would otherwise
pass for one whose batch said nothing. ``last_dropped`` counts what the latest step dropped.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import regex

from pipeline.analysis.prompts import passage_inputs, step_messages, summary_inputs
from pipeline.analysis.types import Focus, Passage, Point, Summary
from pipeline.answering.citations import MARKER, best_quote, extract_markers, supports
from pipeline.answering.openai_stream import ChatEndpoint
from pipeline.answering.sentences import MAX_SENTENCE_CHARS
from pipeline.extractors.reference_lists import REFERENCES
from pipeline.types import PipelineError

log = logging.getLogger(__name__)

_BULLET = regex.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+")
# Chunks one point cites: enough to show where it comes from, few enough to check each one.
MAX_POINT_CHUNKS = 4
# What one point may cost: a sentence and its markers.
_TOKENS_PER_POINT = 160


@dataclass(frozen=True)
class _Input:
    """One numbered input a point may cite: the chunks it carries, each with the passage a claim
    must be supported by; ``resource_id`` and ``order`` for the point that cites it first."""

    evidence: tuple[tuple[str, str], ...]
    resource_id: str
    order: tuple[int, int]


@dataclass
class Dropped:
    markers: int = 0
    points: int = 0


class LLMAnalysisEngine:
    name = "openai-compatible"

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout: float = 240.0, *, temperature: float = 0.0) -> None:
        self.endpoint = ChatEndpoint.configured(base_url, model, api_key, timeout, temperature)
        self.last_dropped = Dropped()

    def map(self, passages: list[Passage], focus: Focus, points: int) -> list[Point]:
        readable = [p for p in passages if p.locator.get("section") != REFERENCES]
        inputs = [_Input(((p.chunk_id, p.text),), p.resource_id, (p.ordinal, 0)) for p in readable]
        return self._step(step_messages(focus, points, passage_inputs(readable)), inputs, points)

    def reduce(self, summaries: list[Summary], focus: Focus, points: int) -> list[Point]:
        lower = [point for summary in summaries for point in summary.points]
        inputs = [_Input(tuple((chunk, p.quote_of(i)) for i, chunk in enumerate(p.chunk_ids)), p.resource_id, p.order)
                  for p in lower]
        return self._step(step_messages(focus, points, summary_inputs(summaries)), inputs, points)

    def _step(self, messages: list[dict], inputs: list[_Input], points: int) -> list[Point]:
        self.last_dropped = Dropped()
        if not inputs:
            return []
        # More than the points asked for could fill is not read.
        answer = self.endpoint.complete(messages, max_tokens=points * _TOKENS_PER_POINT)
        written = [line for line in answer.splitlines() if line.strip()]
        kept: list[Point] = []
        for line in written:
            if len(kept) == points:
                break
            if (point := self._point(line, inputs)) is not None:
                kept.append(point)
        log.info("model step: %d points kept of %d lines; %d citations and %d points dropped",
                 len(kept), len(written), self.last_dropped.markers, self.last_dropped.points)
        if written and not kept:
            raise PipelineError("LLM_BAD_RESPONSE", "The model wrote no point that cites its inputs as asked.")
        return kept

    def _point(self, line: str, inputs: list[_Input]) -> Point | None:
        claim = " ".join(MARKER.sub("", _BULLET.sub("", line)).split())
        markers = extract_markers(line)
        refs = list(dict.fromkeys(int(marker) for marker in markers if marker.isdigit() and 1 <= int(marker) <= len(inputs)))
        cited: dict[str, str] = {}
        for number in refs:
            for chunk_id, passage in inputs[number - 1].evidence:
                if chunk_id not in cited and supports(passage, claim):
                    cited[chunk_id] = best_quote(passage, claim)
        supported = [number for number in refs if any(chunk in cited for chunk, _ in inputs[number - 1].evidence)]
        self.last_dropped.markers += len(markers) - len(supported)
        if not claim or not cited or len(claim) > MAX_SENTENCE_CHARS:
            self.last_dropped.points += 1
            return None
        chunk_ids = tuple(cited)[:MAX_POINT_CHUNKS]
        first = inputs[supported[0] - 1]
        return Point(claim, chunk_ids, first.resource_id, 0.0, first.order, tuple(cited[chunk] for chunk in chunk_ids))

