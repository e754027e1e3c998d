"""The evidence pack: what an extract worker uploads must read back byte for byte."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline import evidence_pack
from pipeline.embedder import HashingEmbedder, to_bytes
from pipeline.types import PipelineError

CHUNKS = [
    {"chunk_id": "c1", "ordinal": 0, "text": "Zürich — naïve café", "locator": {"page": 1, "char_start": 0}},
    {"chunk_id": "c2", "ordinal": 1, "text": "second", "locator": {"page": 2, "char_start": 0}},
]


def packed() -> tuple[evidence_pack.Evidence, np.ndarray]:
    vectors = HashingEmbedder(dim=16).embed([c["text"] for c in CHUNKS])
    return evidence_pack.evidence_of("hashing-v1", CHUNKS, vectors), vectors


def test_round_trip_keeps_texts_locators_and_the_stored_vector_format() -> None:
    evidence, vectors = packed()
    back = evidence_pack.decode(evidence_pack.encode(evidence))
    assert back.embedder == "hashing-v1" and back.dim == 16
    assert back.chunks == CHUNKS
    assert [bytes(back.vector(i)) for i in range(2)] == [to_bytes(v) for v in vectors]


def test_empty_evidence_round_trips() -> None:
    evidence = evidence_pack.evidence_of("hashing-v1", [], np.zeros((0, 8), dtype=np.float32))
    assert evidence_pack.decode(evidence_pack.encode(evidence)).chunks == []


def test_rows_must_match_chunks() -> None:
    with pytest.raises(ValueError):
        evidence_pack.evidence_of("hashing-v1", CHUNKS, np.zeros((3, 8), dtype=np.float32))


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"",
        lambda data: b"not a pack at all",
        lambda data: data[:-1],  # a vector cut short
        lambda data: data + b"\0\0\0\0",  # one float too many
        lambda data: data[:12] + b"}" + data[13:],  # header JSON broken
        lambda data: evidence_pack.MAGIC + b"\xff\xff\xff\x7f{}",  # header length past the end
    ],
)
def test_damaged_packs_are_rejected_with_a_stable_code(damage) -> None:  # type: ignore[no-untyped-def]
    data = evidence_pack.encode(packed()[0])
    with pytest.raises(PipelineError) as raised:
        evidence_pack.decode(damage(data))
    assert raised.value.code == "EVIDENCE_PACK_INVALID"


def test_chunks_missing_fields_are_rejected() -> None:
    evidence = evidence_pack.Evidence("hashing-v1", 1, [{"chunk_id": "c1"}], memoryview(b"\0\0\0\0"))
    with pytest.raises(PipelineError):
        evidence_pack.decode(evidence_pack.encode(evidence))
