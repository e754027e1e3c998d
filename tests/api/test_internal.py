"""/internal: only the shared secret opens it, and evidence is taken only for a source still waiting
for its result (late, repeated, cancelled or oversized uploads are refused and leave nothing)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

import pytest

from app.extensions import Services
from storage import jobs, revisions
from storage.models import Job, Notebook
from support_api import create_notebook


@dataclass
class Draft:
    job_id: str
    pending: str
    done: str


def services_of(world) -> Services:  # type: ignore[no-untyped-def]
    return world.app.extensions["gnosi"]


def secret(world) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"Authorization": f"Bearer {services_of(world).settings.shared_secret()}"}


def running_draft(world) -> Draft:  # type: ignore[no-untyped-def]
    """A job claimed by a (pretend) coordinator, with one source pending and one already stored."""
    notebook_id = create_notebook(world, ["dmca"])
    with services_of(world).db.session() as session:
        notebook = session.get(Notebook, notebook_id)
        job = jobs.active_job(session, notebook)
        jobs.claim(session, job.id, "test", timedelta(minutes=5))
        draft = revisions.create_draft(session, notebook, job.id)
        job.revision_id = draft.id
        common = {"resource_id": "dmca", "field": "file", "kind": "attachment"}
        pending = revisions.add_source(session, draft, value="a.pdf", state="indexing", **common)
        done = revisions.add_source(session, draft, value="b.pdf", state="available", **common)
        return Draft(job.id, pending.id, done.id)


def put(world, draft: Draft, source_id: str, body: bytes = b"pack", headers=None):  # type: ignore[no-untyped-def]
    return world.client.put(
        f"/internal/jobs/{draft.job_id}/sources/{source_id}/evidence",
        data=body,
        headers=secret(world) if headers is None else headers,
        content_type="application/octet-stream",
    )


def test_a_pending_source_takes_its_pack(world) -> None:
    draft = running_draft(world)
    body = bytes(range(256)) * 8000  # over the app-wide 1 MB JSON request cap
    response = put(world, draft, draft.pending, body)
    assert response.status_code == 201 and response.json["bytes"] == len(body)
    assert services_of(world).spool.read(draft.job_id, draft.pending) == body


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nope"}, "user"])
def test_only_the_shared_secret_opens_internal(world, headers) -> None:
    draft = running_draft(world)
    response = put(world, draft, draft.pending, headers=world.headers("alice") if headers == "user" else headers)
    assert response.status_code == 401 and response.json["code"] == "INTERNAL_AUTH_INVALID"
    assert services_of(world).spool.job_ids() == []


def test_refused_uploads_leave_nothing(world) -> None:
    draft = running_draft(world)
    other = running_draft(world)
    unknown = put(world, Draft("f" * 32, "", ""), draft.pending)
    assert unknown.status_code == 404 and unknown.json["code"] == "JOB_NOT_FOUND"
    foreign = put(world, draft, other.pending)
    assert foreign.status_code == 404 and foreign.json["code"] == "SOURCE_NOT_FOUND"
    finished = put(world, draft, draft.done)
    assert finished.status_code == 409 and finished.json["code"] == "SOURCE_NOT_PENDING"
    with services_of(world).db.session() as session:
        session.get(Job, draft.job_id).state = "cancelling"
    cancelled = put(world, draft, draft.pending)
    assert cancelled.status_code == 409 and cancelled.json["code"] == "JOB_CANCELLED"
    assert services_of(world).spool.job_ids() == []


def test_an_oversized_pack_is_413_and_leaves_nothing(world) -> None:
    services = services_of(world)
    services.settings = replace(services.settings, evidence_max_bytes=1000)
    draft = running_draft(world)
    response = put(world, draft, draft.pending, b"x" * 1001)
    assert response.status_code == 413 and response.json["code"] == "EVIDENCE_TOO_LARGE"
    assert services.spool.read(draft.job_id, draft.pending) is None


def test_a_queued_job_has_no_draft_to_take_evidence(world) -> None:
    notebook_id = create_notebook(world, ["dmca"])
    with services_of(world).db.reader() as session:
        job = jobs.active_job(session, session.get(Notebook, notebook_id))
    response = put(world, Draft(job.id, "", ""), "0" * 32)
    assert response.status_code == 404 and response.json["code"] == "SOURCE_NOT_FOUND"
