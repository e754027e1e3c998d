"""The evidence pack: what an extract worker uploads must read back byte for byte."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from pipeline import evidence_pack
from pipeline.embedder import HashingEmbedder, to_bytes
from pipeline.types import PipelineError

CHUNKS = [
    {"chunk_id": "c1", "ordinal": 0, "text": "Zürich — naïve café", "locator": {"page": 1, "char_start": 0}},
    {"chunk_id": "c2", "ordinal": 1, "text": "second", "locator": {"page": 2, "char_start": 0}},
]


P = evidence_pack.PREFIX_SIZE


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
        lambda data: data[:P] + b"}" + data[P + 1:],  # header JSON broken, lengths intact
        lambda data: evidence_pack.MAGIC + struct.pack("<III", 2**31, 4, 1) + b"{}",  # lengths past the end
        lambda data: evidence_pack.MAGIC + struct.pack("<III", 2, 0, 0) + b"{}",  # no dimensions
        lambda data: data.replace(b'"chunks":[', b'"chunkz":[', 1),  # header without its chunks
    ],
)
def test_damaged_packs_are_rejected_with_a_stable_code(damage) -> None:  # type: ignore[no-untyped-def]
    data = evidence_pack.encode(packed()[0])
    with pytest.raises(PipelineError) as raised:
        evidence_pack.decode(damage(data))
    assert raised.value.code == "EVIDENCE_PACK_INVALID"


def test_the_size_check_needs_only_the_first_bytes() -> None:
    data = evidence_pack.encode(packed()[0])
    evidence_pack.check_size(data[:P], len(data))
    for wrong in (len(data) - 1, len(data) + 1):
        with pytest.raises(PipelineError):
            evidence_pack.check_size(data[:P], wrong)
    with pytest.raises(PipelineError):
        evidence_pack.check_size(data[:P - 1], len(data))


def test_a_chunk_count_that_disagrees_with_the_chunks_is_rejected() -> None:
    data = bytearray(evidence_pack.encode(packed()[0]))
    header_length = struct.unpack_from("<I", data, len(evidence_pack.MAGIC))[0]
    struct.pack_into("<III", data, len(evidence_pack.MAGIC), header_length, 8, 4)  # 2 chunks, 4 rows of 8
    with pytest.raises(PipelineError):
        evidence_pack.decode(bytes(data))


def test_chunks_missing_fields_are_rejected() -> None:
    evidence = evidence_pack.Evidence("hashing-v1", 1, [{"chunk_id": "c1"}], memoryview(b"\0\0\0\0"))
    with pytest.raises(PipelineError):
        evidence_pack.decode(evidence_pack.encode(evidence))
