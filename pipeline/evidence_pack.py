"""One source's chunks and vectors as a single binary file: how evidence travels from an extract
worker to the instance that owns the database.

Why not in the Celery message: a source's evidence is hundreds of kilobytes (a 512-dim float32
vector is 2 KiB, more than its chunk's text). Inside a JSON message the vectors were base64-encoded
by the worker, wrapped again by the broker transport, re-serialised into the broker's unacked
set, piped to the pool child and decoded back: about a third of the coordinator's CPU went there
(docs/decisions/0005). A pack is a small JSON header with the chunk texts and locators followed by
the vectors as one little-endian float32 matrix, so reading one is a single ``json.loads`` plus
zero-copy slices of the matrix.

Layout: ``MAGIC`` | header length, dimensions, chunk count (4 bytes each, little-endian) | header
JSON (UTF-8) | vectors. The fixed prefix lets the receiving instance check that a pack is whole
from its first bytes and its length, without parsing it (``check_size``).
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.types import PipelineError

MAGIC = b"GNPACK2\n"
_PREFIX = struct.Struct("<III")  # header length, dimensions, chunk count
PREFIX_SIZE = len(MAGIC) + _PREFIX.size
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
        {"embedder": evidence.embedder, "chunks": evidence.chunks}, ensure_ascii=False, separators=(",", ":")
    ).encode()
    prefix = _PREFIX.pack(len(header), evidence.dim, len(evidence.chunks))
    return b"".join((MAGIC, prefix, header, evidence.vectors))


def _invalid(reason: str) -> PipelineError:
    return PipelineError("EVIDENCE_PACK_INVALID", reason)


def _prefix(data: bytes | memoryview) -> tuple[int, int, int]:
    if len(data) < PREFIX_SIZE or bytes(data[:len(MAGIC)]) != MAGIC:
        raise _invalid("not an evidence pack of this version")
    header_length, dim, count = _PREFIX.unpack(data[len(MAGIC):PREFIX_SIZE])
    if dim < 1:
        raise _invalid("a pack's vectors need at least one dimension")
    return header_length, dim, count


def check_size(first_bytes: bytes | memoryview, size: int) -> tuple[int, int, int]:
    """The prefix's (header length, dimensions, chunk count); raises
    PipelineError("EVIDENCE_PACK_INVALID") unless a pack starting with ``first_bytes`` (at least
    ``PREFIX_SIZE`` of them) is exactly ``size`` bytes long: catches cut uploads."""
    header_length, dim, count = _prefix(first_bytes)
    if size != PREFIX_SIZE + header_length + 4 * dim * count:
        raise _invalid(f"the pack is {size} bytes, its prefix describes another length")
    return header_length, dim, count


def decode(data: bytes) -> Evidence:
    """Raises PipelineError("EVIDENCE_PACK_INVALID") for anything that is not a whole pack."""
    view = memoryview(data)
    header_length, dim, count = check_size(view, len(view))
    try:
        header = json.loads(bytes(view[PREFIX_SIZE:PREFIX_SIZE + header_length]))
        embedder, chunks = str(header["embedder"]), header["chunks"]
    except (ValueError, KeyError, TypeError) as err:
        raise _invalid(f"unreadable pack header: {err}") from None
    valid = isinstance(chunks, list) and len(chunks) == count and all(
        isinstance(chunk, dict) and all(name in chunk for name in _CHUNK_FIELDS) for chunk in chunks
    )
    if not valid:
        raise _invalid("the pack's chunks do not match its vectors")
    return Evidence(embedder, dim, chunks, view[PREFIX_SIZE + header_length:])
