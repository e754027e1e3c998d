"""The corpus recordings' reference transcripts, and how closely a transcript matches one (tests
and bench/media.py)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from support.services import CORPUS

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


@dataclass(frozen=True)
class Recording:
    """A corpus recording, what is said in it, and whether the reference is exact."""

    path: Path
    reference: str
    language: str
    exact: bool


def recordings() -> list[Recording]:
    """Every recording of ``audio/transcripts.json`` with speech in it (the silent one is not)."""
    entries = json.loads((CORPUS / "audio" / "transcripts.json").read_text(encoding="utf-8"))
    return [
        Recording(CORPUS / "audio" / entry["file"], entry["reference"], entry["language"],
                  not entry["reference_kind"].startswith("APPROXIMATE"))
        for entry in entries if entry["reference"]
    ]


def word_error_rate(reference: str, transcript: str) -> float:
    """Word-level edit distance over the reference's length, case and punctuation aside."""
    from rapidfuzz.distance import Levenshtein

    expected, heard = _WORD.findall(reference.lower()), _WORD.findall(transcript.lower())
    return Levenshtein.distance(expected, heard) / len(expected)
