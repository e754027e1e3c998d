"""A cited recording's transcript around the cited chunk, as the evidence endpoint serves it: each
stretch of speech once, whether chunks overlap or not, the cited chunk whole."""
from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from pipeline.chunker import ChunkSettings, chunk_segments
from pipeline.types import Segment
from storage import evidence, revisions
from storage.db import Database
from storage.migrate import upgrade
from storage.models import Chunk, Notebook
from support.stored_notebooks import EMBEDDER, stored_notebook


@pytest.fixture
def db(tmp_path: Path) -> Database:
    upgrade(tmp_path / "notebooks.sqlite3")
    return Database(tmp_path / "notebooks.sqlite3")


def _stored(db: Database, said: list[str], settings: ChunkSettings) -> list[str]:
    segments = [Segment(text, {"start": 5.0 * n, "end": 5.0 * n + 4.5}) for n, text in enumerate(said)]
    chunks = chunk_segments(segments, source_fingerprint="talk", settings=settings)
    vectors = EMBEDDER.embed([chunk.text for chunk in chunks])
    rows = [revisions.ChunkRow(c.chunk_id, c.ordinal, c.text, c.locator, v.tobytes()) for c, v in zip(chunks, vectors)]
    stored_notebook(db, "alice", ("talk",), {"talk": rows})
    return [chunk.chunk_id for chunk in chunks]


def _around(db: Database, chunk_id: str) -> list[dict]:
    with db.session() as session:
        notebook = session.scalars(select(Notebook)).one()
        cited = evidence.chunk_in_revision(session, notebook, notebook.active_revision_id, chunk_id)
        assert cited is not None
        return evidence.transcript_around(session, cited)


SAID = [f"Sentence {n} of the talk." for n in range(8)]


def test_overlapping_chunks_show_each_stretch_of_speech_once(db: Database) -> None:
    ids = _stored(db, SAID, ChunkSettings(70, 30))  # two sentences a chunk, one shared with the next
    parts = _around(db, ids[2])  # sentences 2 and 3, with two chunks either side
    assert [part.get("cited", False) for part in parts] == [False, False, True, False, False]
    assert " ".join(part["text"] for part in parts) == " ".join(SAID[:6])
    assert parts[2]["start"] == 10.0 and parts[2]["text"].startswith(SAID[2])


def test_chunks_that_do_not_overlap_lose_no_word(db: Database) -> None:
    """The next chunk opening with the words the one before ends with is no overlap unless the
    times say so ("station" / "on Monday"; "no" / "no way")."""
    said = ["Then we walked down to the station", "on Monday we left very early today.",
            "I said no to all of it, and more.", "no way, she said, and she left us.", "Fine."]
    ids = _stored(db, said, ChunkSettings(35, 0))
    with db.session() as session:
        texts = [c.text for c in session.scalars(select(Chunk).order_by(Chunk.ordinal))]
    assert texts == said  # one stretch of speech a chunk
    for cited in (ids[1], ids[3]):
        assert [part["text"] for part in _around(db, cited)] == (said[:4] if cited == ids[1] else said[1:])
