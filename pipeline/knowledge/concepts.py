"""Concepts: which concepts a note may feed, what it feeds them with, and a module's body.

The seed's rules (docs/decisions/0021), as pure functions over plain records:
- A note is never merged into a concept because a title looks alike. Its candidates are the
  concepts whose normalized name or alias is one of its key terms or is said by its title, at most
  ``MAX_CANDIDATES``; an engine decides what the note adds (at most ``MAX_DECISIONS`` decisions),
  and code checks every decision, an engine's or a model's (``validate``): a concept that exists
  must be a candidate, a module must match, and every selected block must exist and carry
  evidence, so a contribution only ever rests on what its note can cite.
- A contribution keeps the note version and the blocks it used; a module is rebuilt from exactly
  its valid contributions, and ``inputs_key`` names those inputs, so a rebuild from the same
  inputs (B deleted, then restored) reuses the old module version instead of writing a new one.

The offline engine decides from terms alone: a term a candidate is named by supplements that
candidate; a term that notes of another source version share founds a new concept (one source
alone founds none: a concept is what several sources say). Its modules quote the contributions'
claims, each with its evidence.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Protocol

from pipeline.answering.sentences import content_terms
from pipeline.knowledge.concept_terms import mentions, normalize_name, ranked_terms
from pipeline.textnorm import fold

MAX_DECISIONS = 3
MAX_CANDIDATES = 8
# A module's body: enough points to read as an overview, few enough to check by eye.
MAX_POINTS = 12
# A concept's name names a subject; a sentence is no name (whichever engine proposes it).
MAX_NAME_CHARS = 80
OVERVIEW = "overview"
DECISION_KINDS = ("supplement", "new_module", "new_concept", "evidence_only", "no_change", "invalid", "conflict")
# Decisions that feed a module with blocks of the note; those that name a concept that exists.
FEEDING = ("supplement", "new_module", "new_concept", "evidence_only")
_EXISTING = ("supplement", "new_module", "evidence_only")
# Two claims sharing this share of their terms say the same thing: a module quotes one.
_SAME_CLAIM = 0.8
# Blocks whose words are no terms: code and formulas name variables, not subjects, and a
# heading's title case would make every word of it look like a name.
_NO_TERMS = ("code", "formula", "heading")


@dataclass(frozen=True)
class NoteInput:
    """A note version as stored: blocks ``{"key", "kind", "text", "human_revised"}``, claims
    ``{"key", "text", "block_key"}``, evidence ``{"claim_key", "block_key", "block_ordinal",
    "page", "page_label", "snippet"}``."""

    note_id: str
    note_version_id: str
    source_version_id: str
    title: str
    summary: str
    blocks: tuple[dict[str, Any], ...]
    claims: tuple[dict[str, Any], ...]
    evidence: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Candidate:
    """A concept a note may feed: its name, aliases and its modules' keys (oldest first)."""

    concept_id: str
    name: str
    aliases: tuple[str, ...]
    module_keys: tuple[str, ...]


@dataclass(frozen=True)
class Decision:
    """What a note adds to one concept: ``kind`` is one of ``DECISION_KINDS``; ``concept_id`` is
    None for a new concept; ``block_keys`` are the note's blocks the contribution uses; ``reason``
    is what a model said of an "invalid" or "conflict" decision, for a person to review."""

    kind: str
    concept_id: str | None
    concept_name: str
    module_key: str
    module_title: str
    block_keys: tuple[str, ...]
    reason: str = ""


@dataclass(frozen=True)
class ContributionInput:
    """A valid contribution as a module is built from it: the note version and the blocks used."""

    contribution_id: str
    note_version_id: str
    source_version_id: str
    block_keys: tuple[str, ...]
    note: NoteInput


def key_terms(note: NoteInput, limit: int = 8) -> list[str]:
    """The note's recurring terms, best first (``concept_terms.ranked_terms``)."""
    body = [block["text"] for block in note.blocks if block.get("kind") not in _NO_TERMS]
    return ranked_terms(note.title, body, [claim["text"] for claim in note.claims], limit)


def candidates_for(note: NoteInput, concepts: list[Candidate], limit: int = MAX_CANDIDATES) -> list[Candidate]:
    """The concepts named by one of the note's key terms (the better the term, the earlier) or
    by its title, at most ``limit`` (and never more than ``MAX_CANDIDATES``: a model compares
    them all); equals keep the order ``concepts`` came in."""
    terms = [normalize_name(term) for term in key_terms(note)]
    title = normalize_name(note.title)
    ranked = []
    for order, concept in enumerate(concepts):
        names = _names(concept)
        rank = min((terms.index(name) for name in names if name in terms), default=None)
        if rank is None and any(mentions(title, name) for name in names):
            rank = len(terms)
        if rank is not None:
            ranked.append((rank, order, concept))
    ranked.sort(key=lambda entry: entry[:2])
    return [concept for _, _, concept in ranked[:min(limit, MAX_CANDIDATES)]]


def module_title(key: str) -> str:
    """A module's title from its key ("matrix-form" → "Matrix form"); an existing module keeps
    its own title."""
    return key.replace("-", " ").replace("_", " ").strip().capitalize()


class ConceptEngine(Protocol):
    """What decides merges and writes modules: the offline engine, or a model's
    (``pipeline.knowledge.concept_llm``). Whatever it answers, ``validate`` checks its decisions
    and a module's points only ever quote or restate claims with evidence."""

    name: str

    def decide(self, note: NoteInput, candidates: list[Candidate], shared_terms: set[str]) -> list[Decision]: ...

    def build_module(self, title: str, contributions: list[ContributionInput], *, concept: str = "") -> list[dict[str, Any]]: ...

    def judge_module(self, title: str, contributions: list[ContributionInput], points: list[dict[str, Any]], *,
                     concept: str = "") -> tuple[str, ...]: ...


class OfflineConceptEngine:
    """Decisions from shared terms and modules that quote claims: deterministic, no model."""

    name = "offline"

    def decide(self, note: NoteInput, candidates: list[Candidate], shared_terms: set[str]) -> list[Decision]:
        """For each key term, best first: a candidate it names is supplemented (its first module,
        or a new "overview" module); a term in ``shared_terms`` (normalized terms notes of other
        source versions have) founds a new concept. Each decision selects the note's blocks that
        say the term and carry evidence; a term no such block says decides nothing."""
        texts = {block["key"]: normalize_name(block["text"]) for block in note.blocks}
        evidenced = evidenced_blocks(note)
        decisions: list[Decision] = []
        taken: set[str] = set()
        for term in key_terms(note):
            key = normalize_name(term)
            blocks = tuple(block for block in evidenced if mentions(texts[block], key))
            concept = next((c for c in candidates if key in _names(c)), None)
            identity = concept.concept_id if concept else key
            if not blocks or identity in taken or (concept is None and key not in shared_terms):
                continue
            if concept is None:
                decisions.append(Decision("new_concept", None, term[:1].upper() + term[1:], OVERVIEW, module_title(OVERVIEW), blocks))
            else:
                module = concept.module_keys[0] if concept.module_keys else OVERVIEW
                kind = "supplement" if concept.module_keys else "new_module"
                decisions.append(Decision(kind, concept.concept_id, concept.name, module, module_title(module), blocks))
            taken.add(identity)
            if len(decisions) == MAX_DECISIONS:
                break
        return decisions

    def build_module(self, title: str, contributions: list[ContributionInput], *, concept: str = "") -> list[dict[str, Any]]:
        """The module's points (``concept``, its concept's name, is for a model's sake): each contribution's claims in its selected blocks that have
        evidence, quoted with it (a claim is a sentence of the document). A claim near-identical
        to one an earlier contribution made is quoted once. At most ``MAX_POINTS``, taken in
        turns from the contributions (claims saying ``title`` first), so that every source is
        heard; shown by contribution, then by position in the note."""
        wanted = set(content_terms(title))
        seen: list[tuple[frozenset[str], str]] = []
        picks = []
        for number, contribution in enumerate(contributions):
            points = []
            for position, point in claim_points(contribution):
                terms, text = frozenset(content_terms(point["text"])), fold(" ".join(point["text"].split()))
                if any(text == other or _same(terms, kept) for kept, other in seen):
                    continue
                seen.append((terms, text))
                points.append((not wanted & terms, position, point))
            points.sort(key=lambda entry: entry[:2])
            picks.extend(((turn, number), (number, position), point) for turn, (_, position, point) in enumerate(points))
        chosen = sorted(picks, key=lambda pick: pick[0])[:MAX_POINTS]
        return [point for _, _, point in sorted(chosen, key=lambda pick: pick[1])]

    def judge_module(self, title: str, contributions: list[ContributionInput], points: list[dict[str, Any]], *,
                     concept: str = "") -> tuple[str, ...]:
        """No judge: every point quotes a claim with its evidence, word for word."""
        return ()


def validate(note: NoteInput, candidates: list[Candidate], decisions: list[Decision]) -> tuple[list[Decision], list[str]]:
    """The decisions code accepts, and what was wrong with the others (short sentences). At most
    ``MAX_DECISIONS`` are read; a decision naming an existing concept must name a candidate (and
    an existing module, or a new one for ``new_module``); a new concept must not repeat a
    candidate's name; selected blocks that do not exist or carry no evidence are removed, and a
    decision that feeds a module with none left is dropped; a repeated target is dropped."""
    problems = []
    if len(decisions) > MAX_DECISIONS:
        problems.append(f"{len(decisions) - MAX_DECISIONS} decisions beyond {MAX_DECISIONS} left out")
    by_id = {candidate.concept_id: candidate for candidate in candidates}
    named = {name: candidate.concept_id for candidate in candidates for name in _names(candidate)}
    known = {block["key"] for block in note.blocks}
    evidenced = set(evidenced_blocks(note))
    kept: list[Decision] = []
    targets: set[tuple[str, str]] = set()
    for number, decision in enumerate(decisions[:MAX_DECISIONS], start=1):
        found = _problem(decision, by_id, named)
        blocks = tuple(dict.fromkeys(decision.block_keys))
        missing = [key for key in blocks if key not in known]
        bare = [key for key in blocks if key in known and key not in evidenced]
        if missing:
            problems.append(f"decision {number}: no block {', '.join(missing)} in the note")
        if bare:
            problems.append(f"decision {number}: block {', '.join(bare)} carries no evidence")
        blocks = tuple(key for key in blocks if key in evidenced)
        target = (decision.concept_id or normalize_name(decision.concept_name), decision.module_key)
        if found is None and decision.kind in FEEDING and not blocks:
            found = "no block with evidence is left"
        if found is None and decision.kind in FEEDING and target in targets:
            found = "repeats an earlier decision's module"
        if found is not None:
            problems.append(f"decision {number} ({decision.kind}) dropped: {found}")
            continue
        targets.add(target)
        kept.append(Decision(decision.kind, decision.concept_id, decision.concept_name, decision.module_key,
                             decision.module_title, blocks, decision.reason))
    return kept, problems


def inputs_key(contributions: list[ContributionInput]) -> str:
    """A module's inputs as one hash: its contributions' note versions with the blocks each
    used, in no particular order. Equal keys mean the same inputs, so the module version built
    from them can be reused; a new note version (an edit, an upload again) is a new key."""
    pairs = sorted((c.note_version_id, sorted(c.block_keys)) for c in contributions)
    return hashlib.sha256(json.dumps(pairs, separators=(",", ":")).encode()).hexdigest()


def _problem(decision: Decision, by_id: dict[str, Candidate], named: dict[str, str]) -> str | None:
    """What makes a decision unacceptable whatever its blocks, or None."""
    if decision.kind not in DECISION_KINDS:
        return f"unknown kind {decision.kind!r}"
    if decision.concept_id is not None and decision.concept_id not in by_id:
        return f"concept {decision.concept_id} is not a candidate"
    if decision.kind == "new_concept":
        name = normalize_name(decision.concept_name or "")
        if decision.concept_id is not None:
            return "a new concept names an existing one"
        if not name:
            return "a new concept needs a name"
        if len(decision.concept_name) > MAX_NAME_CHARS:
            return f"a concept's name is at most {MAX_NAME_CHARS} characters"
        if name in named:
            return f"the name is concept {named[name]}'s"
    elif decision.kind in _EXISTING:
        if decision.concept_id is None:
            return "names no existing concept"
        modules = by_id[decision.concept_id].module_keys
        if decision.kind == "new_module" and decision.module_key in modules:
            return f"module {decision.module_key!r} exists already"
        if decision.kind != "new_module" and decision.module_key not in modules:
            return f"module {decision.module_key!r} is not the concept's"
    if decision.kind in FEEDING and not (decision.module_key or "").strip():
        return "names no module"
    return None


def _names(candidate: Candidate) -> set[str]:
    return {normalize_name(name) for name in (candidate.name, *candidate.aliases)} - {""}


def _evidence_by_claim(note: NoteInput) -> dict[str, list[dict[str, Any]]]:
    """Each claim's evidence that ties it to the block stating it."""
    blocks = {claim["key"]: claim["block_key"] for claim in note.claims}
    found: dict[str, list[dict[str, Any]]] = {}
    for item in note.evidence:
        if blocks.get(item.get("claim_key")) == item.get("block_key"):
            found.setdefault(item["claim_key"], []).append(item)
    return found


def evidenced_blocks(note: NoteInput) -> list[str]:
    """The note's blocks that state a claim with evidence, in the note's order."""
    evidence = _evidence_by_claim(note)
    stating = {claim["block_key"] for claim in note.claims if claim["key"] in evidence}
    return [block["key"] for block in note.blocks if block["key"] in stating]


def claim_points(contribution: ContributionInput) -> list[tuple[tuple[int, int], dict[str, Any]]]:
    """The contribution's claims with evidence in its selected blocks, as module points with
    their position in the note (block, then claim)."""
    note = contribution.note
    order = {block["key"]: index for index, block in enumerate(note.blocks)}
    evidence = _evidence_by_claim(note)
    selected = set(contribution.block_keys)
    points = []
    for index, claim in enumerate(note.claims):
        if claim["block_key"] in selected and claim["key"] in evidence and claim["block_key"] in order:
            points.append(((order[claim["block_key"]], index), {
                "text": claim["text"], "note_id": note.note_id, "note_version_id": note.note_version_id,
                "block_key": claim["block_key"], "claim_key": claim["key"],
                "evidence": [dict(item) for item in evidence[claim["key"]]],
            }))
    return sorted(points, key=lambda entry: entry[0])


def _same(one: frozenset[str], other: frozenset[str]) -> bool:
    """Near-identical: most of the longer claim's terms are the other's too."""
    return bool(one and other) and len(one & other) / max(len(one), len(other)) >= _SAME_CLAIM
