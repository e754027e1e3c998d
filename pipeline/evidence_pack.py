"""One source's chunks and vectors as a single binary file: how evidence travels from an extract
worker to the instance that owns the database.

Why not in the Celery message: a source's evidence is hundreds of kilobytes (a 512-dim float32
vector is 2 KiB, more than its chunk's text). Inside a JSON message the vectors were base64-encoded
by the worker, wrapped again by the broker transport, re-serialised into the broker's unacked
set, piped to the pool child and decoded back: about a third of the coordinator's CPU went there
(docs/decisions/0005). A pack is a small JSON header with the chunk texts and locators followed by
the vectors as one little-endian float32 matrix, so reading one is a single ``json.loads`` plus
zero-copy slices of the matrix.

Layout: ``MAGIC`` | header length (4 bytes, little-endian) | header JSON (UTF-8) | vectors.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.types import PipelineError

MAGIC = b"GNPACK1\n"
_LENGTH = struct.Struct("<I")
_CHUNK_FIELDS = ("chunk_id", "ordinal", "text", "locator")


@dataclass(frozen=True)
class Evidence:
    """Chunks in order and their vectors: row ``i`` of ``vectors`` belongs to ``chunks[i]``."""

    embedder: str
    dim: int
    chunks: list[dict[str, Any]]
    vectors: memoryview  # len(chunks) * dim little-endian float32 values

    def vector(self, index: int) -> memoryview:
        width = 4 * self.dim
        return self.vectors[index * width:(index + 1) * width]


def evidence_of(embedder: str, chunks: list[dict[str, Any]], vectors: np.ndarray) -> Evidence:
    matrix = np.ascontiguousarray(vectors, dtype="<f4")
    if matrix.ndim != 2 or matrix.shape[0] != len(chunks):
        raise ValueError(f"{len(chunks)} chunks need as many vector rows, got shape {matrix.shape}")
    return Evidence(embedder, int(matrix.shape[1]), chunks, memoryview(matrix.tobytes()))


def encode(evidence: Evidence) -> bytes:
    header = json.dumps(
        {"embedder": evidence.embedder, "dim": evidence.dim, "chunks": evidence.chunks},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode()
    return b"".join((MAGIC, _LENGTH.pack(len(header)), header, evidence.vectors))


def decode(data: bytes) -> Evidence:
    """Raises PipelineError("EVIDENCE_PACK_INVALID") for anything that is not a whole pack."""
    view = memoryview(data)
    start = len(MAGIC) + _LENGTH.size
    if bytes(view[:len(MAGIC)]) != MAGIC or len(view) < start:
        raise PipelineError("EVIDENCE_PACK_INVALID", "not an evidence pack")
    (header_length,) = _LENGTH.unpack(view[len(MAGIC):start])
    try:
        header = json.loads(bytes(view[start:start + header_length]))
        embedder, dim, chunks = header["embedder"], int(header["dim"]), header["chunks"]
        valid = isinstance(chunks, list) and all(
            isinstance(chunk, dict) and all(name in chunk for name in _CHUNK_FIELDS) for chunk in chunks
        )
    except (ValueError, KeyError, TypeError) as err:
        raise PipelineError("EVIDENCE_PACK_INVALID", f"unreadable pack header: {err}") from None
    vectors = view[start + header_length:]
    if not valid or dim < 1 or len(vectors) != 4 * dim * len(chunks):
        raise PipelineError("EVIDENCE_PACK_INVALID", "the pack's chunks and vectors do not match")
    return Evidence(embedder, dim, chunks, vectors)
