"""The extraction cache's key and bytes: what may share an entry, and what is refused on reading."""
from __future__ import annotations

import json
import zlib
from dataclasses import replace

import pytest

from pipeline.extraction_cache import ExtractInputs, decode, encode, extraction_key
from pipeline.extractors import extract
from pipeline.extractors.limits import ExtractLimits
from pipeline.types import Extraction, PipelineError
from support.services import CORPUS

HASH = "ab" * 32
PDF = ExtractInputs("paper.pdf", "application/pdf")


def test_a_real_extraction_comes_back_unchanged() -> None:
    data = (CORPUS / "pdf" / "dmca.pdf").read_bytes()
    extraction = extract(data, filename="dmca.pdf", mime="application/pdf", limits=ExtractLimits())
    packed = encode(extraction)
    plain = json.dumps([[segment.text, segment.locator] for segment in extraction.segments])
    assert len(packed) < len(plain) / 2  # compressed
    assert decode(packed, max_bytes=50 << 20) == extraction
    unread = replace(extraction, pages_needing_ocr=[19, 20], ocr_errors=[{"page": 19, "code": "OCR_TIMEOUT", "message": "m"}])
    assert decode(encode(unread), max_bytes=50 << 20) == unread


def test_the_key_changes_with_everything_the_output_depends_on() -> None:
    limits = ExtractLimits()
    key = extraction_key(HASH, PDF, limits)
    assert key == extraction_key(HASH, ExtractInputs("paper.pdf", "application/pdf"), ExtractLimits())
    others = {
        extraction_key("cd" * 32, PDF, limits),
        extraction_key(HASH, replace(PDF, url="https://example.org/paper.pdf"), limits),
        extraction_key(HASH, replace(PDF, declared_charset="latin-1"), limits),
        extraction_key(HASH, replace(PDF, mime="text/html"), limits),
        extraction_key(HASH, PDF, replace(limits, max_pages=10)),
    }
    assert key not in others and len(others) == 5


@pytest.mark.parametrize(
    "data",
    [
        b"not compressed",
        zlib.compress(b"{not json"),
        zlib.compress(json.dumps({"mime": "text/plain"}).encode()),
        zlib.compress(b'{"a": 1}')[:-3],
        zlib.compress(b" " * (2 << 20)),  # inflates past the cap below
    ],
    ids=["raw", "not-json", "missing-fields", "cut", "too-large"],
)
def test_anything_else_is_refused_with_a_code(data: bytes) -> None:
    with pytest.raises(PipelineError) as caught:
        decode(data, max_bytes=1 << 20)
    assert caught.value.code == "EXTRACTION_INVALID"
