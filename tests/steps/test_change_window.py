"""Openings and questions trust a recent "nothing changed" for GNOSI_CHANGE_CHECK_SECONDS: a file
edited on disk is noticed by the first opening after that window and not before, while a change
made through the service and an explicit refresh are seen at once."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import select

from app.services.recent_checks import RecentChecks
from storage.models import Job, NotebookResource
from steps.test_task_contract import counting, ingest, open_notebook, wrap

if TYPE_CHECKING:
    from steps.conftest import Instance, Lab

WINDOW = 30


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_edited_file_is_noticed_after_the_window_and_not_before(
    lab: Lab, launch: Callable[..., Instance], monkeypatch: pytest.MonkeyPatch
) -> None:
    instance = launch(GNOSI_OPENS_PER_MINUTE="60", GNOSI_CHANGE_CHECK_SECONDS=str(WINDOW))
    clock = Clock()
    instance.app.extensions["gnosi"].recent_checks = RecentChecks(WINDOW, clock=clock)
    notebook_id, job = ingest(instance)
    assert job.state == "succeeded", job.error
    observed: list[tuple[Any, ...]] = []
    wrap(monkeypatch, "app.services.ingest.plan", counting(observed))

    assert [open_notebook(instance, notebook_id) for _ in range(3)] == ["not_needed"] * 3
    assert len(observed) == 1, "the second and third openings trust the first one's verdict"

    pdf = lab.vault.root / "files" / "dmca.pdf"
    pdf.write_bytes(pdf.read_bytes() + b"\n% edited\n")
    clock.now += WINDOW - 1
    assert open_notebook(instance, notebook_id) == "not_needed", "inside the window the edit is not looked for"
    clock.now += 2
    assert open_notebook(instance, notebook_id) == "queued", "the first opening after the window notices it"
    assert instance.wait_job_end(_last_job(instance, notebook_id)).state == "succeeded"


def test_a_refresh_looks_whatever_the_window(lab: Lab, launch: Callable[..., Instance]) -> None:
    instance = launch(GNOSI_OPENS_PER_MINUTE="60", GNOSI_CHANGE_CHECK_SECONDS=str(WINDOW))
    notebook_id, job = ingest(instance)
    assert job.state == "succeeded", job.error
    assert instance.call("GET", f"/api/notebooks/{notebook_id}?open=1").json["ingest"] == "not_needed"
    pdf = lab.vault.root / "files" / "dmca.pdf"
    pdf.write_bytes(pdf.read_bytes() + b"\n% edited\n")
    response = instance.call("POST", f"/api/notebooks/{notebook_id}/refresh")
    assert response.status_code == 202 and response.json["ingest"] == "queued", response.json
    instance.wait_job_end(response.json["job"]["id"])


def _last_job(instance: Instance, notebook_id: str) -> str:
    return instance.read(lambda session: session.scalars(
        select(Job.id).where(Job.notebook_id == notebook_id).order_by(Job.created_at.desc())).first())


def test_a_question_checks_for_changes_only_after_its_answer_is_out(lab: Lab, launch: Callable[..., Instance]) -> None:
    """The change check (a stat of every attachment once its window has passed) must not delay a
    turn's first event: it runs once the turn's events are out, and still notices the edit."""
    instance = launch(GNOSI_CHANGE_CHECK_SECONDS="0")
    notebook_id, job = ingest(instance)
    assert job.state == "succeeded", job.error
    pdf = lab.vault.root / "files" / "dmca.pdf"
    pdf.write_bytes(pdf.read_bytes() + b"\n% edited\n")
    response = instance.client.post(
        "/api/chat", json={"notebook_id": notebook_id, "message": "What is notice and takedown?"},
        headers={"Authorization": f"Bearer {lab.tokens['alice']}"}, buffered=False,
    )
    stream = iter(response.response)
    first = next(stream)
    assert first.startswith(b"event: tool"), first
    assert _last_job(instance, notebook_id) == job.id, "no check has run before the first event"
    rest = b"".join(stream)
    assert b"event: done" in rest
    queued = _last_job(instance, notebook_id)
    assert queued != job.id, "the edit was noticed by the question, after its answer"
    assert instance.wait_job_end(queued).state == "succeeded"


def test_a_check_that_finds_nothing_changed_counts_as_a_successful_check(
    lab: Lab, launch: Callable[..., Instance]
) -> None:
    """The sources panel's "last successful check" moves with every check that ran, not only
    with a new revision."""
    instance = launch(GNOSI_OPENS_PER_MINUTE="60", GNOSI_CHANGE_CHECK_SECONDS="0")
    notebook_id, job = ingest(instance)
    assert job.state == "succeeded", job.error

    def last_checked() -> list[Any]:  # the API shows them to the second; the rows hold more
        with instance.app.extensions["gnosi"].db.reader() as session:
            return list(session.scalars(
                select(NotebookResource.last_success_at)
                .where(NotebookResource.notebook_id == notebook_id)
                .order_by(NotebookResource.resource_id)
            ))

    after_ingestion = last_checked()
    assert all(after_ingestion)
    assert open_notebook(instance, notebook_id) == "not_needed"
    after_opening = last_checked()
    assert all(later > earlier for later, earlier in zip(after_opening, after_ingestion))
    response = instance.call("POST", f"/api/notebooks/{notebook_id}/refresh")
    assert response.status_code in (200, 202) and response.json["ingest"] == "not_needed"
    assert all(later > earlier for later, earlier in zip(last_checked(), after_opening))
