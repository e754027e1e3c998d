"""A person's (or the agent's) rewrite of one block of a note, as the next version's content.

The untouched blocks keep their text, their claims and their evidence. The rewritten block is
marked ``human_revised`` and its claims are unbound with their evidence: the document's words
prove what the document said, not the new wording, so a page would otherwise vouch for a sentence
it never contained (the seed's rule). The note's title and summary stay.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import regex

MAX_BLOCK_CHARS = 20000
# Controls other than tab and newline (a block may hold lines: a list, code, a formula's rows),
# and the bidirectional overrides and isolates that make text read differently from what it is.
_FORBIDDEN = regex.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@dataclass(frozen=True)
class Revised:
    blocks: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    evidence: list[dict[str, Any]]
    unbound_claims: list[str]


def block_text_problem(text: Any) -> str | None:
    """Why ``text`` cannot be a block's text, or None: the one rule for a person's edit and the
    agent's."""
    if not isinstance(text, str) or not text.strip():
        return "must be a non-empty string"
    if len(text) > MAX_BLOCK_CHARS:
        return f"is longer than {MAX_BLOCK_CHARS} characters"
    if _FORBIDDEN.search(text):
        return "must not contain control characters (other than tabs and newlines) or bidirectional overrides"
    return None


def revise(blocks: list[dict[str, Any]], claims: list[dict[str, Any]], evidence: list[dict[str, Any]],
           block_key: str, text: str) -> Revised | None:
    """The content with block ``block_key`` rewritten as ``text``; None when the text is the
    block's already (nothing to version). Raises KeyError when the note has no such block."""
    block = next((b for b in blocks if b["key"] == block_key), None)
    if block is None:
        raise KeyError(block_key)
    if block["text"] == text:
        return None
    unbound = [claim["key"] for claim in claims if claim["block_key"] == block_key]
    return Revised(
        [{**b, "text": text, "human_revised": True} if b["key"] == block_key else b for b in blocks],
        [claim for claim in claims if claim["block_key"] != block_key],
        [item for item in evidence if item["block_key"] != block_key and item["claim_key"] not in unbound],
        unbound,
    )
