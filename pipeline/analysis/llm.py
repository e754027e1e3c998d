"""The analysis engine for any OpenAI-compatible chat endpoint (``GNOSI_LLM_*``).

One request per step (``prompts.step_messages``); the answer's points are kept only as far as
they are grounded in the step's own inputs:
- a marker naming no input of this step (an invented ``ref`` or chunk id) is dropped;
- a marker whose input does not support the claim (``pipeline.answering.citations.supports``,
  the lexical check chat uses) is dropped;
- a point left without a marker is dropped: nothing reaches a result without its evidence.
A map point cites the chunks it names, with the passage of each that supports it; a reduce point
cites every chunk of the points it names, with their passages. ``last_dropped`` counts the
markers and points dropped by the latest step (the step logs it).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import httpx
import regex

from pipeline.analysis.prompts import passage_inputs, step_messages, summary_inputs
from pipeline.analysis.types import Focus, Passage, Point, Summary
from pipeline.answering.citations import MARKER, best_quote, extract_markers, supports
from pipeline.answering.openai_stream import stream_chunks

log = logging.getLogger(__name__)

_BULLET = regex.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+")


@dataclass(frozen=True)
class _Cited:
    """One input a point may cite: its text (what must support the claim), and the chunks and
    passages a citation of it carries."""

    text: str
    chunk_ids: tuple[str, ...]
    quotes: tuple[str, ...]
    resource_id: str
    order: tuple[int, int]


@dataclass
class Dropped:
    markers: int = 0
    points: int = 0


class LLMAnalysisEngine:
    name = "openai-compatible"

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout: float = 180.0, *, temperature: float = 0.0) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self.temperature = temperature
        self._headers = {"Accept": "text/event-stream"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self.last_dropped = Dropped()

    def map(self, passages: list[Passage], focus: Focus, points: int) -> list[Point]:
        cited = [_Cited(p.text, (p.chunk_id,), (), p.resource_id, (p.ordinal, 0)) for p in passages]
        by_chunk = {passage.chunk_id: number for number, passage in enumerate(passages, start=1)}
        return self._step(step_messages(focus, points, passage_inputs(passages)), cited, by_chunk, points, quote=True)

    def reduce(self, summaries: list[Summary], focus: Focus, points: int) -> list[Point]:
        inputs = [point for summary in summaries for point in summary.points]
        cited = [_Cited(p.text, p.chunk_ids, tuple(p.quote_of(i) for i in range(len(p.chunk_ids))), p.resource_id, p.order)
                 for p in inputs]
        return self._step(step_messages(focus, points, summary_inputs(summaries)), cited, {}, points, quote=False)

    def _step(self, messages: list[dict], cited: list[_Cited], by_chunk: dict[str, int], points: int, *, quote: bool) -> list[Point]:
        self.last_dropped = Dropped()
        written = [line for line in self._complete(messages).splitlines() if line.strip()]
        kept = [point for line in written if (point := self._point(line, cited, by_chunk, quote)) is not None]
        self.last_dropped.points += max(0, len(kept) - points)
        log.info("model step: %d points kept; %d citations and %d points dropped",
                 min(points, len(kept)), self.last_dropped.markers, self.last_dropped.points)
        return kept[:points]

    def _complete(self, messages: list[dict]) -> str:
        payload = {"model": self.model, "messages": messages, "stream": True, "temperature": self.temperature}
        parts: list[str] = []
        with httpx.Client(timeout=self.timeout) as client:
            for chunk in stream_chunks(client, self.url, payload, self._headers):
                for choice in chunk.get("choices") or []:
                    parts.append((choice.get("delta") or {}).get("content") or "")
        return "".join(parts)

    def _point(self, line: str, cited: Sequence[_Cited], by_chunk: dict[str, int], quote: bool) -> Point | None:
        claim = " ".join(MARKER.sub("", _BULLET.sub("", line)).split())
        refs = [number for marker in extract_markers(line) if (number := _ref(marker, len(cited), by_chunk))]
        self.last_dropped.markers += len(extract_markers(line)) - len(refs)
        backing = [cited[number - 1] for number in dict.fromkeys(refs)]
        supported = [item for item in backing if supports(item.text, claim)]
        self.last_dropped.markers += len(backing) - len(supported)
        if not claim or not supported:
            self.last_dropped.points += 1
            return None
        chunk_ids = tuple(dict.fromkeys(chunk for item in supported for chunk in item.chunk_ids))
        quotes = {chunk: (best_quote(item.text, claim) if quote else item.quotes[i])
                  for item in supported for i, chunk in enumerate(item.chunk_ids)}
        first = supported[0]
        return Point(claim, chunk_ids, first.resource_id, 0.0, first.order, tuple(quotes[chunk] for chunk in chunk_ids))


def _ref(marker: str, count: int, by_chunk: dict[str, int]) -> int | None:
    """The 1-based input a marker names: a ``ref`` number, or (map) a passage's chunk id."""
    if marker.isdigit():
        return int(marker) if 1 <= int(marker) <= count else None
    return by_chunk.get(marker)
