"""The concept engine for any OpenAI-compatible chat endpoint (``GNOSI_LLM_*``): a model decides
what a note adds to the concepts, and writes a module's points (docs/decisions/0021).

Nothing a model answers is taken on trust:
- A decision names blocks, candidates and modules by the numbers and keys it was shown
  (``concept_prompts``); a number that names nothing is kept as a name that cannot match, so that
  ``concepts.validate`` drops it and says why, exactly as it would for a wrong id. An "invalid" or
  "conflict" decision stores nothing; its reason goes to the event's problems for a person to read.
- A module point restates one claim, the one its ``ref`` names: it is kept only when that claim's
  words (the claim and its evidence snippets) support it lexically (chat's ``citations.supports``),
  and it carries that claim's evidence, so every point of a module still rests on a page. A point
  naming no claim, a second point on one claim, and an over-long one are dropped and counted
  (``last_dropped``). A module judge (``judge_module``, a second request) reads the points
  against their claims; the caller publishes no module it refuses.
Requests are bounded as the note writer's are (``ChatEndpoint.complete``). A transport failure is
``LLM_UNAVAILABLE``; an answer that is not the JSON asked for is ``LLM_BAD_RESPONSE``.
"""
from __future__ import annotations

import logging
from typing import Any

import regex

from pipeline.answering.citations import supports
from pipeline.answering.openai_stream import ChatEndpoint
from pipeline.knowledge import model_json as reply
from pipeline.knowledge.concept_prompts import MAX_MODULE_CLAIMS, decide_messages, module_judge_messages, module_messages
from pipeline.knowledge.concepts import (
    MAX_POINTS,
    Candidate,
    ContributionInput,
    Decision,
    NoteInput,
    claim_points,
    module_title,
)

log = logging.getLogger(__name__)

_DECIDE_TOKENS = 800
_JUDGE_TOKENS = 800
_UNSAID = "The judge found that the module does not hold to its claims, without saying why."
_POINT_TOKENS = 120
# A point is one sentence restating a claim: a paragraph is not a point.
MAX_POINT_CHARS = 600
_NOT_A_KEY = regex.compile(r"[^\p{L}\p{N}]+")
_REASON_CHARS = 300


class LLMConceptEngine:
    """Merge decisions and module bodies written by a model, checked by code (``ConceptEngine``)."""

    name = "openai-compatible"

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout: float = 240.0, *, temperature: float = 0.0) -> None:
        self.endpoint = ChatEndpoint.configured(base_url, model, api_key, timeout, temperature)
        self.last_dropped = 0

    def decide(self, note: NoteInput, candidates: list[Candidate], shared_terms: set[str]) -> list[Decision]:
        """The model's decisions for ``note``, its numbers turned into the ids and keys they name."""
        answer = reply.json_object(self.endpoint.complete(decide_messages(note, candidates, shared_terms),
                                                          max_tokens=_DECIDE_TOKENS))
        blocks = [block["key"] for block in note.blocks]
        decisions = []
        for item in reply.listed(answer, "decisions"):
            if not isinstance(item, dict):
                continue
            kind = item.get("kind") if isinstance(item.get("kind"), str) else "invalid"
            candidate = _named(candidates, item.get("concept"))
            concept_id = candidate.concept_id if candidate else (None if item.get("concept") is None else f"unknown candidate {item['concept']!r}")
            key = _key(reply.text(item, "module"))
            decisions.append(Decision(
                kind, concept_id, candidate.name if candidate else reply.text(item, "name"), key,
                reply.text(item, "module_title") or module_title(key),
                tuple(_named(blocks, ref) or f"#{ref}" for ref in reply.listed(item, "blocks")),
                reply.text(item, "reason")[:_REASON_CHARS],
            ))
        return decisions

    def build_module(self, title: str, contributions: list[ContributionInput], *, concept: str = "") -> list[dict[str, Any]]:
        """The module's points as the model wrote them, each kept only where the claim it names
        supports it; taken in turns from the contributions when there are more claims than a
        request carries, so that every source is offered."""
        self.last_dropped = 0
        offered = _in_turns(contributions)[:MAX_MODULE_CLAIMS]
        if not offered:
            return []
        max_tokens = 200 + MAX_POINTS * _POINT_TOKENS
        answer = reply.json_object(self.endpoint.complete(module_messages(concept or title, title, offered, MAX_POINTS),
                                                          max_tokens=max_tokens))
        points: list[dict[str, Any]] = []
        used: set[int] = set()
        for item in reply.listed(answer, "points"):
            ref, text = reply.number(item.get("ref")) if isinstance(item, dict) else None, reply.text(item, "text")
            claim = offered[ref - 1][2] if ref is not None and 1 <= ref <= len(offered) and ref not in used else None
            if claim is None or not text or len(text) > MAX_POINT_CHARS or not supports(_words_of(claim), text):
                self.last_dropped += 1
                continue
            used.add(ref)
            points.append({**claim, "text": text})
            if len(points) == MAX_POINTS:
                break
        log.info("module %r: %d points kept, %d dropped", title, len(points), self.last_dropped)
        return points

    def judge_module(self, title: str, contributions: list[ContributionInput], points: list[dict[str, Any]], *,
                     concept: str = "") -> tuple[str, ...]:
        """The module judge (the seed's), a second request: the kept points read against the claims
        they restate; its problems, or ``()`` when the module holds. A verdict that cannot be read
        is a bad response: nothing is published unjudged."""
        offered = _in_turns(contributions)[:MAX_MODULE_CLAIMS]
        refs = {(point["note_version_id"], point["claim_key"]): ref for ref, (_, _, point) in enumerate(offered, start=1)}
        judged = [(refs.get((point["note_version_id"], point["claim_key"]), 0), point["text"]) for point in points]
        answer = reply.json_object(self.endpoint.complete(module_judge_messages(concept or title, title, offered, judged),
                                                          max_tokens=_JUDGE_TOKENS))
        return reply.verdict(answer, "the module", _UNSAID)


def _named(items: list[Any], ref: Any) -> Any:
    """The item a 1-based number names, or None."""
    number = reply.number(ref)
    return items[number - 1] if number is not None and 1 <= number <= len(items) else None


def _key(text: str) -> str:
    """A module key as the model named it ("Matrix form" → "matrix-form"); keys we made are already so."""
    return _NOT_A_KEY.sub("-", text.casefold()).strip("-")[:60]


def _in_turns(contributions: list[ContributionInput]) -> list[tuple[int, ContributionInput, dict[str, Any]]]:
    """Every contribution's claims with evidence as (source number, contribution, point), the first
    claim of each contribution first, then the second of each, and so on."""
    sources: dict[str, int] = {}
    turns = []
    for order, contribution in enumerate(contributions):
        source = sources.setdefault(contribution.source_version_id, len(sources) + 1)
        for turn, (_, point) in enumerate(claim_points(contribution)):
            turns.append(((turn, order), (source, contribution, point)))
    return [entry for _, entry in sorted(turns, key=lambda pair: pair[0])]


def _words_of(point: dict[str, Any]) -> str:
    """What a restatement of the claim may rest on: the claim and its sources' words."""
    return " ".join([point["text"], *(item.get("snippet") or "" for item in point["evidence"])])
