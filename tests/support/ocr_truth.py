"""Corpus pages with known text, and how closely an OCR reading matches it (tests and bench/ocr.py)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from support.services import CORPUS


@dataclass(frozen=True)
class TruthPage:
    """One page of a corpus file and the text printed on it."""

    path: Path
    page: int
    truth: str
    mime: str

    @property
    def name(self) -> str:
        return f"{self.path.name} p{self.page}"


def _truth(name: str) -> str:
    return (CORPUS / "images" / name).read_text(encoding="utf-8")


def truth_pages() -> list[TruthPage]:
    """The corpus pages MANIFEST.md gives whole reference texts for (the Chinese sign is left out:
    the packaged easyocr weights read English only)."""
    linn = _truth("linn.groundtruth.txt")
    pages = [TruthPage(CORPUS / "images" / "linn.png", 1, linn, "image/png")]
    pages += [TruthPage(CORPUS / "pdf" / "cardinal.pdf", page, linn, "application/pdf") for page in (1, 2, 3, 4)]
    pages += [
        TruthPage(CORPUS / "images" / "typewriter.png", 1, _truth("typewriter.groundtruth.txt"), "image/png"),
        TruthPage(CORPUS / "images" / "english.png", 1, _truth("english.groundtruth.txt"), "image/png"),
        TruthPage(
            CORPUS / "pdf" / "ocr_test.pdf", 1,
            "Docling bundles PDF document conversion to JSON and Markdown in an easy self contained package",
            "application/pdf",
        ),
    ]
    return pages


def character_accuracy(read: str, truth: str) -> float:
    """1 - (edit distance / reference length), on whitespace-normalised text: the usual OCR
    character accuracy (1.0 is perfect; it can go below 0 for a reading far longer than the truth)."""
    from rapidfuzz.distance import Levenshtein

    read_words, truth_words = " ".join(read.split()), " ".join(truth.split())
    return 1 - Levenshtein.distance(read_words, truth_words) / max(len(truth_words), 1)


def best_match_accuracy(read: str, phrase: str) -> float:
    """How well the best-matching stretch of ``read`` matches ``phrase`` (0..1): for a reference
    that covers only part of a page (MANIFEST.md gives epson.pdf's first sentence)."""
    from rapidfuzz import fuzz

    return fuzz.partial_ratio(" ".join(phrase.split()), " ".join(read.split())) / 100
