"""Transcription in the extract step of the real chain: the job says how far a recording's
transcript has come (the worker reports it through the internal API, which keeps the job's
lease), a cancel lands between windows of speech, chunks carry their time range, and a
recording in which no one speaks is read, with no text, rather than failed."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import select

from pipeline.speech.models import missing
from pipeline.speech.settings import SpeechSettings
from steps.test_task_contract import calling_first, cancel_active_jobs, ingest, wrap
from storage.models import Chunk, Job
from support.services import require

if TYPE_CHECKING:
    from steps.conftest import Instance, Lab


@pytest.fixture
def talk_instance(lab: Lab, launch: Callable[..., Instance]) -> Instance:
    require(missing(SpeechSettings().model) is None, f"speech model: {missing(SpeechSettings().model)}")
    lab.vault.record("talk", "The MIT licence, read twice", file=lab.vault.attach_corpus("audio/multilingual.mp3"))
    lab.vault.record("quiet", "A second of silence", file=lab.vault.attach_corpus("audio/silent_1s.wav"))
    return launch()


def _activity(instance: Instance) -> list[str | None]:
    return instance.read(lambda session: [job.activity for job in session.query(Job).filter(Job.state == "running")])


def test_the_job_says_how_far_the_transcript_has_come(talk_instance: Instance, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str | None]] = []
    wrap(monkeypatch, "pipeline.speech.transcribing._read", calling_first(lambda: seen.append(_activity(talk_instance))))
    notebook_id, job = ingest(talk_instance, ["talk"])
    assert job.state == "succeeded", job.error
    assert seen == [["Transcribing: 0:00 of 0:59"], ["Transcribing: 0:30 of 0:59"]]
    revision = talk_instance.notebook(notebook_id).active_revision_id
    [source] = talk_instance.sources(revision)
    assert (source.state, source.mime) == ("available", "audio/mpeg")
    locators = talk_instance.read(
        lambda s: [chunk.locator for chunk in s.scalars(select(Chunk).where(Chunk.revision_id == revision).order_by(Chunk.ordinal))]
    )
    assert [(locator["language"], locator["start"] < 30 <= locator["end"]) for locator in locators] == [("en", False), ("de", False)]
    assert all(locator["transcript"] == "base" and 0 <= locator["start"] < locator["end"] <= 60 for locator in locators)


def test_a_cancel_stops_a_transcript_between_windows(talk_instance: Instance, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []

    def before_read() -> None:
        read.append(len(read) + 1)
        assert cancel_active_jobs(talk_instance) == ["cancelling"]

    wrap(monkeypatch, "pipeline.speech.transcribing._read", calling_first(before_read))
    _, job = ingest(talk_instance, ["talk"])
    assert job.state == "cancelled", job.error
    assert read == [1], "a window was transcribed after the cancel"


def test_a_silent_recording_is_read_with_no_speech_not_failed(talk_instance: Instance) -> None:
    notebook_id, job = ingest(talk_instance, ["quiet", "talk"])
    assert job.state == "succeeded", job.error
    revision = talk_instance.notebook(notebook_id).active_revision_id
    quiet = next(source for source in talk_instance.sources(revision) if source.resource_id == "quiet")
    assert (quiet.state, quiet.error_code) == ("available", "NO_SPEECH"), quiet.error
    assert talk_instance.chunk_count(revision, quiet.id) == 0
