"""/internal: only the shared secret opens it, and evidence is taken only for a source still waiting
for its result (late, repeated, cancelled or oversized uploads are refused and leave nothing); the
extraction cache takes and returns entries under well-formed keys and forgets orphans."""
from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, replace
from datetime import timedelta

import numpy as np
import pytest

from app.extensions import Services
from pipeline import evidence_pack
from storage import jobs, revisions
from storage.models import Job, Notebook, Source
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


def a_pack(chunks: int = 2, dim: int = 8) -> bytes:
    rows = [{"chunk_id": f"c{i}", "ordinal": i, "text": f"text {i}", "locator": {"page": 1}} for i in range(chunks)]
    return evidence_pack.encode(evidence_pack.evidence_of("hashing-v1", rows, np.ones((chunks, dim), np.float32)))


PACK = a_pack()


def put(  # type: ignore[no-untyped-def]
    world, draft: Draft, source_id: str, body: bytes = PACK, headers=None, pack_id: str | None = None
):
    return world.client.put(
        f"/internal/jobs/{draft.job_id}/sources/{source_id}/evidence/{pack_id or uuid.uuid4().hex}",
        data=body,
        headers=secret(world) if headers is None else headers,
        content_type="application/octet-stream",
    )


def test_a_pending_source_takes_its_pack(world) -> None:
    draft = running_draft(world)
    body = a_pack(chunks=300, dim=1024)  # over the app-wide 1 MB JSON request cap
    assert len(body) > 1_000_000
    pack_id = uuid.uuid4().hex
    response = put(world, draft, draft.pending, body, pack_id=pack_id)
    assert response.status_code == 201 and response.json["bytes"] == len(body)
    assert services_of(world).spool.read(draft.job_id, draft.pending, pack_id) == body


@pytest.mark.parametrize(
    ("body", "pack_id", "code"),
    [
        (PACK[:-1], None, "EVIDENCE_PACK_INVALID"),  # cut short
        (PACK + b"\0", None, "EVIDENCE_PACK_INVALID"),
        (b"", None, "EVIDENCE_PACK_INVALID"),
        (b"%PDF-1.7 not a pack", None, "EVIDENCE_PACK_INVALID"),
        (PACK, "NOT-A-PACK-ID", "PACK_ID_INVALID"),
    ],
)
def test_malformed_uploads_are_400_and_leave_nothing(world, body: bytes, pack_id: str | None, code: str) -> None:
    draft = running_draft(world)
    response = put(world, draft, draft.pending, body, pack_id=pack_id)
    assert response.status_code == 400 and response.json["code"] == code
    assert not any(services_of(world).settings.spool_dir.rglob("*.pack*"))


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
    response = put(world, draft, draft.pending, a_pack(chunks=40))
    assert response.status_code == 413 and response.json["code"] == "EVIDENCE_TOO_LARGE"
    assert not any(services.settings.spool_dir.rglob("*.pack*"))


def test_a_job_that_ended_takes_no_evidence_for_its_draft(world) -> None:
    draft = running_draft(world)
    with services_of(world).db.session() as session:
        session.get(Job, draft.job_id).state = "failed"
    response = put(world, draft, draft.pending)
    assert response.status_code == 404 and response.json["code"] == "SOURCE_NOT_FOUND"
    assert services_of(world).spool.job_ids() == []


KEY = "0123456789abcdef" * 4


def test_an_extraction_is_kept_and_read_back_with_the_secret_only(world) -> None:
    path = f"/internal/extractions/{KEY}"
    assert world.client.head(path, headers=secret(world)).status_code == 404
    assert world.client.put(path, data=b"packed", headers=world.headers("alice")).status_code == 401
    stored = world.client.put(path, data=b"packed", headers=secret(world))
    assert stored.status_code == 201 and stored.json == {"key": KEY, "bytes": 6}
    assert world.client.head(path, headers=secret(world)).status_code == 200
    assert world.client.get(path, headers=secret(world)).data == b"packed"
    assert world.client.get(path, headers=world.headers("alice")).status_code == 401


@pytest.mark.parametrize("key", ["x" * 64, KEY[:-1], KEY.upper(), "..%2F" + KEY[5:]])
def test_a_malformed_extraction_key_is_400(world, key: str) -> None:
    for method in ("GET", "PUT"):
        response = world.client.open(f"/internal/extractions/{key}", method=method, data=b"x", headers=secret(world))
        assert response.status_code in (400, 404), (method, key)
        assert response.json["code"] in ("EXTRACTION_KEY_INVALID", "NOT_FOUND"), response.json
    assert not any(services_of(world).extractions.root.rglob("*"))


def test_an_oversized_extraction_is_413_and_leaves_nothing(world) -> None:
    services = services_of(world)
    services.settings = replace(services.settings, evidence_max_bytes=1000)
    response = world.client.put(f"/internal/extractions/{KEY}", data=b"x" * 1001, headers=secret(world))
    assert response.status_code == 413 and response.json["code"] == "EXTRACTION_TOO_LARGE"
    assert not any(services.extractions.root.rglob("*"))


def test_cached_extractions_no_source_names_go_after_a_day(world) -> None:
    """Entries of cancelled or failed jobs are never named by a source; a named one stays."""
    services = services_of(world)
    draft = running_draft(world)
    named, orphan, fresh = KEY, "1" * 64, "2" * 64
    for key in (named, orphan, fresh):
        world.client.put(f"/internal/extractions/{key}", data=b"packed", headers=secret(world))
    a_day_ago = time.time() - 86_400 - 60
    for key in (named, orphan):
        os.utime(services.extractions.path(key), (a_day_ago, a_day_ago))
    with services.db.session() as session:
        session.get(Source, draft.done).extraction_key = named
    with services.db.reader() as session:
        assert services.extractions.delete_orphans(session) == 1
    assert [services.extractions.has(key) for key in (named, orphan, fresh)] == [True, False, True]


@pytest.mark.parametrize(("state", "code"), [("cancelling", "JOB_CANCELLED"), ("succeeded", "JOB_NOT_RUNNING")])
def test_an_attachment_is_refused_to_a_job_that_is_not_running(world, state: str, code: str) -> None:
    """Fetching the bytes is the extract step's read of its job's state: no separate round trip."""
    draft = running_draft(world)
    with services_of(world).db.session() as session:
        session.get(Job, draft.job_id).state = state
    response = world.client.get(f"/internal/sources/{draft.pending}/content?job={draft.job_id}", headers=secret(world))
    assert response.status_code == 409 and response.json["code"] == code


@pytest.mark.parametrize("body", [{"activity": "OCR: page 3 (3 of 9)"}, ["not", "an", "object"], {"activity": None}])
def test_activity_is_kept_only_for_a_source_still_waiting(world, body) -> None:  # type: ignore[no-untyped-def]
    draft = running_draft(world)
    for source_id in (draft.done, draft.pending):
        response = world.client.post(
            f"/internal/jobs/{draft.job_id}/sources/{source_id}/activity", json=body, headers=secret(world)
        )
        assert response.status_code == 200 and response.json["state"] == "running", response.json
        with services_of(world).db.session() as session:
            job = session.get(Job, draft.job_id)
            kept = (job.activity, job.current_resource_id)
        said = body.get("activity") if isinstance(body, dict) else None
        assert kept == ((said, "dmca") if source_id == draft.pending else (None, None)), (source_id, kept)
