"""/internal: what stateless extract workers need from the instance that owns the database.

Guarded by the instance's shared secret (never a user token); answers only job state, the bytes
of attachment sources and cached extractions, so a leaked worker credential cannot read notebooks
or chats. It also takes evidence packs for sources of a running job's draft and extractions for
the cache: the holder of the secret is a trusted extract worker, and can put text into drafts
being indexed, as anyone who can publish ``ingest.index`` messages on the broker always could.
Keep it as secret as the broker URL.
"""
from __future__ import annotations

import hmac
from datetime import timedelta
from pathlib import Path

from flask import Blueprint, request, send_file
from werkzeug.exceptions import RequestEntityTooLarge

from app.errors import ApiError
from app.extensions import services
from pipeline import evidence_pack
from pipeline.catalogue import resolve_attachment
from pipeline.types import FILE_KINDS, PipelineError
from storage import jobs
from storage.models import Source
from storage.extractions import KEY
from storage.files import TooLarge
from storage.spool import PACK_ID

bp = Blueprint("internal", __name__, url_prefix="/internal")


@bp.before_request
def _require_shared_secret() -> None:
    header = request.headers.get("Authorization", "")
    expected = "Bearer " + services().shared_secret
    if not hmac.compare_digest(header.encode(), expected.encode()):
        raise ApiError(401, "INTERNAL_AUTH_INVALID", "Internal endpoints need the instance's shared secret.")


@bp.get("/jobs/<job_id>")
def job_state(job_id: str):  # type: ignore[no-untyped-def]
    with services().db.reader() as session:
        job = jobs.get(session, job_id)
        if job is None:
            raise ApiError(404, "JOB_NOT_FOUND", "No such job.")
        return {"id": job.id, "state": job.state}


@bp.post("/jobs/<job_id>/sources/<source_id>/activity")
def report_activity(job_id: str, source_id: str):  # type: ignore[no-untyped-def]
    """A worker says what it is doing on a source of a running job ("OCR: page 3 of 40"): shown
    as the job's progress, and it extends the job's lease, since a long scan may be read for
    longer than one lease without a result. Answers the job's state, which tells the worker in
    the same round trip whether to go on."""
    body = request.get_json(silent=True)
    said = body.get("activity") if isinstance(body, dict) else None
    activity = str(said)[:200] if said else None
    svc = services()
    with svc.db.session() as session:
        job = jobs.get(session, job_id)
        if job is None:
            raise ApiError(404, "JOB_NOT_FOUND", "No such job.")
        source = session.get(Source, source_id)
        if (
            job.state == "running" and source is not None and source.revision_id == job.revision_id
            and source.state == "indexing"
        ):
            job.current_resource_id, job.activity = source.resource_id, activity
            jobs.heartbeat(session, job_id, timedelta(seconds=svc.settings.job_lease_seconds))
        return {"id": job.id, "state": job.state}


@bp.get("/sources/<source_id>/content")
def source_content(source_id: str):  # type: ignore[no-untyped-def]
    """The attachment's bytes (a linked document's: those its sync downloaded, as planned); ``?job=``
    makes this also the job-state check (one round trip)."""
    svc = services()
    with svc.db.reader() as session:
        source = session.get(Source, source_id)
        if source is None or source.kind not in FILE_KINDS:
            raise ApiError(404, "SOURCE_NOT_FOUND", "No such attachment source.")
        job = jobs.get(session, request.args.get("job", ""))
        if job is not None and job.state in ("cancelling", "cancelled"):
            raise ApiError(409, "JOB_CANCELLED", "The job of this source was cancelled.")
        if job is not None and job.state != "running":
            raise ApiError(409, "JOB_NOT_RUNNING", "The job of this source has ended.")
        kind, value, planned_hash = source.kind, source.value, source.fingerprint
    if kind == "linked":
        path, name = _linked_bytes(planned_hash), value.rsplit("/", 1)[-1]
    else:
        path = resolve_attachment(svc.settings.vault_path, value)
        name = path.name
    size = path.stat().st_size
    if size > svc.settings.attachment_max_bytes:
        raise ApiError(
            413, "FILE_TOO_LARGE", f"{path.name} is {size} bytes; the limit is {svc.settings.attachment_max_bytes}."
        )
    return send_file(path, as_attachment=True, download_name=name, conditional=False)


def _linked_bytes(content_hash: str | None) -> Path:
    """The blob a linked document's sync kept; gone only if the document failed to download."""
    path = services().blobs.path(content_hash) if content_hash else None
    if path is None or not path.is_file():
        raise ApiError(409, "LINKED_DOCUMENT_NOT_DOWNLOADED", "The linked file's bytes could not be downloaded; see the document's error.")
    return path


@bp.put("/jobs/<job_id>/sources/<source_id>/evidence/<pack_id>")
def put_evidence(job_id: str, source_id: str, pack_id: str):  # type: ignore[no-untyped-def]
    """Spool one source's evidence pack next to the database for the coordinator to store.

    Only for a source of the job's draft that still waits for its result, so a late or repeated
    upload cannot touch a finished source; a cut or malformed pack is refused (400) on arrival.
    """
    svc = services()
    if not PACK_ID.fullmatch(pack_id):
        raise ApiError(400, "PACK_ID_INVALID", "A pack id is 32 lowercase hex digits.")
    with svc.db.reader() as session:
        job = jobs.get(session, job_id)
        if job is None:
            raise ApiError(404, "JOB_NOT_FOUND", "No such job.")
        if job.state in ("cancelling", "cancelled"):
            raise ApiError(409, "JOB_CANCELLED", "The job of this source was cancelled.")
        source = session.get(Source, source_id)
        if source is None or source.revision_id != job.revision_id or job.state != "running":
            raise ApiError(404, "SOURCE_NOT_FOUND", "No such source in this job's draft.")
        if source.state != "indexing":
            raise ApiError(409, "SOURCE_NOT_PENDING", "This source already has its result.")
    limit = svc.settings.evidence_max_bytes
    too_large = ApiError(413, "EVIDENCE_TOO_LARGE", f"The evidence pack is over {limit} bytes.")
    if (request.content_length or 0) > limit:
        raise too_large
    request.max_content_length = limit  # the app-wide cap is for JSON requests
    try:
        size = svc.spool.write(
            job_id, source_id, pack_id, request.stream, max_bytes=limit, check=evidence_pack.check_size
        )
    except (TooLarge, RequestEntityTooLarge):
        raise too_large from None
    except PipelineError as err:
        raise ApiError(400, err.code, err.message) from None
    return {"job_id": job_id, "source_id": source_id, "pack_id": pack_id, "bytes": size}, 201


def _extraction_key(key: str) -> str:
    if not KEY.fullmatch(key):
        raise ApiError(400, "EXTRACTION_KEY_INVALID", "An extraction key is 64 lowercase hex digits.")
    return key


@bp.get("/extractions/<key>")
def get_extraction(key: str):  # type: ignore[no-untyped-def]
    """A cached extraction (``HEAD`` asks whether there is one without its bytes)."""
    path = services().extractions.path(_extraction_key(key))
    if not path.is_file():
        raise ApiError(404, "EXTRACTION_NOT_FOUND", "No cached extraction has this key.")
    return send_file(path, mimetype="application/octet-stream", conditional=False)


@bp.put("/extractions/<key>")
def put_extraction(key: str):  # type: ignore[no-untyped-def]
    """Keep an extraction in the cache. The key is the worker's claim about what it holds; a
    worker holding the secret is trusted with it as with evidence packs."""
    svc = services()
    limit = svc.settings.evidence_max_bytes
    too_large = ApiError(413, "EXTRACTION_TOO_LARGE", f"The extraction is over {limit} bytes.")
    if (request.content_length or 0) > limit:
        raise too_large
    request.max_content_length = limit
    try:
        size = svc.extractions.write(_extraction_key(key), request.stream, max_bytes=limit)
    except (TooLarge, RequestEntityTooLarge):
        raise too_large from None
    return {"key": key, "bytes": size}, 201
