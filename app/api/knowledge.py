"""The knowledge layer of a notebook (issue #20): documents made into source notes of atomic notes.

Who may do what is ``app.services.knowledge_access``; the stages run on Celery
(``tasks.knowledge``). Adding a document answers at once: 202 with the new version and its job,
or 200 with the existing version and its job when an active source already has those bytes.
"""
from __future__ import annotations

import io
from collections.abc import Callable

from flask import Blueprint, request, send_file
from sqlalchemy.orm import Session

from app.api.access import visible_notebook
from app.auth import current_principal, signed_in_person
from app.errors import ApiError
from app.extensions import services
from app.http import bool_field, choice_field, int_field, json_object, limit_arg, paging, refuse_unknown_fields, string_field
from app.services import knowledge_access as access
from app.services import knowledge_answers, knowledge_approvals, knowledge_edits
from app.services.knowledge_view import (
    answer_json,
    hit_json,
    job_json,
    jobs_json,
    note_json,
    source_json,
    source_note_json,
    sources_json,
)
from pipeline.knowledge.markdown import source_note_markdown
from pipeline.knowledge.ask import MAX_HITS
from pipeline.knowledge.edit import block_text_problem
from pipeline.knowledge.types import STAGES
from storage.knowledge import events, jobs, notes, sources
from storage.knowledge.counts import count_in_notebook
from storage.models import KnowledgeJob, KnowledgeSource, KnowledgeSourceNoteVersion, Notebook
from storage.scope import Principal
from tasks.knowledge import advance, send_event, start_job

MAX_QUESTION_CHARS = 2000

bp = Blueprint("knowledge", __name__, url_prefix="/api/notebooks/<notebook_id>/knowledge")


@bp.post("/sources")
def add(notebook_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    access.writer(principal)
    body = json_object()
    refuse_unknown_fields(body, ("resource_id", "source_id", "new_version"))
    resource_id = string_field(body, "resource_id", required=True, max_len=500)
    source_id = string_field(body, "source_id", required=False, max_len=32)
    new_version = bool_field(body, "new_version", default=False)
    svc = services()
    with svc.db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        document = access.member_document(session, notebook, resource_id, source_id)
        added = sources.add(session, notebook, document, new_version=new_version, engine=svc.note_writer_name,
                            requested_by=principal.user_id)
        replaced = None
        if added.replaced is not None:  # what the old version fed stops counting now, not at the new one's publish
            replaced, _ = events.enqueue(session, notebook, "source_replaced", {
                "source_id": added.version.source_id, "replaced_version_id": added.replaced, "version_id": added.version.id,
            }, f"source_replaced:{added.version.id}")
        source = source_json(session, sources.get(session, notebook, added.version.source_id))
        shown = {"source": source, "version": source["active_version"], "duplicate": added.duplicate}  # added or found: active
    if replaced is not None:
        send_event(replaced.id)
    if not added.duplicate and added.job is not None:
        start_job(added.job.id)
    return shown, 200 if added.duplicate else 202


@bp.get("/sources")
def listed(notebook_id: str):  # type: ignore[no-untyped-def]
    """The knowledge sources, and whether the reader may add and change them (``can_write``)."""
    principal = current_principal()
    page = paging(default_per_page=50, max_per_page=200)
    with services().db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        found = sources.of_notebook(session, notebook, limit=page.per_page, offset=page.offset)
        return page.shown(sources_json(session, found), count_in_notebook(session, KnowledgeSource, notebook),
                          can_write=principal.can_write)


@bp.get("/sources/<source_id>")
def read_source(notebook_id: str, source_id: str):  # type: ignore[no-untyped-def]
    with services().db.reader() as session:
        notebook = visible_notebook(session, current_principal(), notebook_id)
        return source_json(session, access.source(session, notebook, source_id), with_versions=True)


@bp.delete("/sources/<source_id>")
def delete_source(notebook_id: str, source_id: str):  # type: ignore[no-untyped-def]
    """The source leaves the knowledge (its running jobs stop; its notes stay as history)."""

    def delete(session: Session, notebook: Notebook, source: KnowledgeSource) -> str:
        sources.delete(session, source)
        return source.deleted_at.isoformat()

    return _source_changed(notebook_id, source_id, "deleted", "source_deleted", delete)


@bp.post("/sources/<source_id>/restore")
def restore_source(notebook_id: str, source_id: str):  # type: ignore[no-untyped-def]
    resumed: list[str] = []

    def restore(session: Session, notebook: Notebook, source: KnowledgeSource) -> str:
        if sources.active_duplicate(session, notebook, source) is not None:
            raise ApiError(409, "SOURCE_DUPLICATE", "An active source has the same content now: delete it before restoring this one.")
        deleted_at = source.deleted_at.isoformat()
        resumed.extend(job.id for job in sources.restore(session, source))
        return deleted_at

    shown = _source_changed(notebook_id, source_id, "active", "source_restored", restore)
    for job_id in resumed:  # the job the deletion stopped goes on from where it was
        advance.delay(job_id, resend=True)
    return shown


def _source_changed(notebook_id: str, source_id: str, state: str, kind: str,
                    change: Callable[[Session, Notebook, KnowledgeSource], str]):  # type: ignore[no-untyped-def]
    """Move the source to ``state`` (nothing when it is there already) and send the event the
    concepts follow, keyed by the deletion it ends or begins (``change`` returns its time)."""
    principal = current_principal()
    access.writer(principal)
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        source = access.source(session, notebook, source_id)
        if source.state == state:
            return source_json(session, source)
        stamp = change(session, notebook, source)
        event, _ = events.enqueue(session, notebook, kind, {"source_id": source.id}, f"{kind}:{source.id}:{stamp}")
        shown, event_id = source_json(session, source), event.id
    send_event(event_id)
    return shown


@bp.get("/jobs")
def jobs_listed(notebook_id: str):  # type: ignore[no-untyped-def]
    page = paging(default_per_page=20, max_per_page=100)
    with services().db.reader() as session:
        notebook = visible_notebook(session, current_principal(), notebook_id)
        found = jobs.of_notebook(session, notebook, limit=page.per_page, offset=page.offset)
        return page.shown(jobs_json(session, found), count_in_notebook(session, KnowledgeJob, notebook))


@bp.get("/jobs/<job_id>")
def read_job(notebook_id: str, job_id: str):  # type: ignore[no-untyped-def]
    with services().db.reader() as session:
        notebook = visible_notebook(session, current_principal(), notebook_id)
        return job_json(session, access.job(session, notebook, job_id))


@bp.post("/jobs/<job_id>/cancel")
def cancel_job(notebook_id: str, job_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    access.writer(principal)
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        job = access.job(session, notebook, job_id)
        jobs.request_cancel(job)
        if job.state in ("cancelling", "cancelled"):  # a person's cancel: a restore of its source does not undo it
            job.error_code = job.error = None
        return job_json(session, job)


@bp.post("/jobs/<job_id>/restart")
def restart_job(notebook_id: str, job_id: str):  # type: ignore[no-untyped-def]
    """Run an ended job again from a stage: that stage's outputs and every later one's are made
    again, earlier ones are kept."""
    principal = current_principal()
    access.writer(principal)
    body = json_object()
    refuse_unknown_fields(body, ("stage",))
    stage = choice_field(body, "stage", STAGES, STAGES[0]) or STAGES[0]
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        job = access.job(session, notebook, job_id)
        if job.state in jobs.ACTIVE_STATES:
            raise ApiError(409, "KNOWLEDGE_JOB_RUNNING", "The job is still running: cancel it first, or wait for it.")
        if not sources.is_current(session, job.source_version_id):
            raise ApiError(409, "SOURCE_CHANGED", "The source was deleted or has a newer version since this job ran.")
        jobs.restart_from(session, job, stage)
        shown = job_json(session, job)
    advance.delay(job_id, resend=True)
    return shown, 202


@bp.get("/source-notes/<snapshot_id>")
def read_source_note(notebook_id: str, snapshot_id: str):  # type: ignore[no-untyped-def]
    with services().db.reader() as session:
        notebook = visible_notebook(session, current_principal(), notebook_id)
        return source_note_json(session, notebook.id, _snapshot(session, notebook, snapshot_id))


@bp.get("/source-notes/<snapshot_id>/markdown")
def source_note_export(notebook_id: str, snapshot_id: str):  # type: ignore[no-untyped-def]
    """The source note as one Markdown document, exactly the note versions it pins."""
    with services().db.reader() as session:
        notebook = visible_notebook(session, current_principal(), notebook_id)
        snapshot = _snapshot(session, notebook, snapshot_id)
        shown = source_note_json(session, notebook.id, snapshot)
        pinned = notes.versions_by_id(session, [entry["note_version_id"] for entry in snapshot.toc])
        entries = [(entry, notes.version_dict(pinned[entry["note_version_id"]])) for entry in snapshot.toc]
    text = source_note_markdown(shown["source"]["label"], entries)
    name = shown["source"]["label"].rsplit(".", 1)[0] or "source-note"
    # send_file writes the name as HTTP wants it: an ASCII fallback and the UTF-8 original, quoted.
    return send_file(io.BytesIO(text.encode("utf-8")), mimetype="text/markdown; charset=utf-8", as_attachment=True,
                     download_name=f"{name}.md", conditional=False)


@bp.get("/notes/<note_id>")
def read_note(notebook_id: str, note_id: str):  # type: ignore[no-untyped-def]
    """A note's active version, or ``?version=`` one of its versions."""
    with services().db.reader() as session:
        notebook = visible_notebook(session, current_principal(), notebook_id)
        note = notes.get(session, notebook, note_id)
        if note is None:
            raise ApiError(404, "NOTE_NOT_FOUND", "No such note in this notebook.")
        version = notes.version_of(session, note, request.args.get("version") or note.active_version_id)
        if version is None:
            raise ApiError(404, "NOTE_VERSION_NOT_FOUND", "No such version of this note.")
        return note_json(session, notebook.id, note, version)


def _snapshot(session: Session, notebook: Notebook, snapshot_id: str) -> KnowledgeSourceNoteVersion:
    snapshot = notes.source_note_version(session, notebook, snapshot_id)
    if snapshot is None:
        raise ApiError(404, "SOURCE_NOTE_NOT_FOUND", "No such source note in this notebook.")
    return snapshot


@bp.get("/search")
def search(notebook_id: str):  # type: ignore[no-untyped-def]
    """Notes (and, unscoped, concepts in turns with them) that ``q`` finds; ``source_version_id``
    scopes it to one source version's notes."""
    question = (request.args.get("q") or "").strip()
    if not question or len(question) > MAX_QUESTION_CHARS:
        raise ApiError(400, "FIELD_INVALID", f"q must be 1 to {MAX_QUESTION_CHARS} characters.", field="q")
    limit = limit_arg(default=MAX_HITS, maximum=MAX_HITS)
    with services().db.reader() as session:
        notebook = visible_notebook(session, current_principal(), notebook_id)
        hits = knowledge_answers.search(session, notebook, question, scope=request.args.get("source_version_id"), limit=limit)
        return {"items": [hit_json(hit) for hit in hits]}


@bp.post("/ask")
def ask(notebook_id: str):  # type: ignore[no-untyped-def]
    """An answer quoted from the pages the hits rest on, each quote cited with its page;
    ``SOURCE_CHANGED`` when a source changed while it was composed."""
    body = json_object()
    refuse_unknown_fields(body, ("question", "source_version_id", "limit"))
    question = string_field(body, "question", required=True, max_len=MAX_QUESTION_CHARS)
    scope = string_field(body, "source_version_id", required=False, max_len=32)
    limit = int_field(body, "limit", default=8, minimum=1, maximum=MAX_HITS)
    svc = services()
    with svc.db.reader() as session:
        notebook = visible_notebook(session, current_principal(), notebook_id)
    composed, hits = knowledge_answers.answer(svc, notebook.id, question, scope=scope, limit=limit)
    with svc.db.reader() as session:
        return answer_json(session, notebook.id, composed, hits)


@bp.patch("/notes/<note_id>/blocks/<block_key>")
def edit_block(notebook_id: str, note_id: str, block_key: str):  # type: ignore[no-untyped-def]
    """A person's edit of one block of the version they read (``app.services.knowledge_edits``)."""
    principal = current_principal()
    access.writer(principal)
    body = json_object()
    refuse_unknown_fields(body, ("expected_version_id", "text"))
    expected = string_field(body, "expected_version_id", required=True, max_len=32)
    text = body.get("text")
    if problem := block_text_problem(text):
        raise ApiError(400, "FIELD_INVALID", f"'text' {problem}.", field="text")
    return _edit(notebook_id, principal, note_id, expected, block_key, text, f"user:{principal.user_id}")


@bp.delete("/notes/<note_id>")
def delete_note(notebook_id: str, note_id: str):  # type: ignore[no-untyped-def]
    """The note leaves its source note and the search; what it fed is withdrawn by its event."""
    principal = current_principal()
    access.writer(principal)
    return _changed(notebook_id, principal, lambda session, notebook: knowledge_edits.delete_note(session, notebook, note_id))


@bp.post("/approvals")
def request_approval(notebook_id: str):  # type: ignore[no-untyped-def]
    """The agent asks the person it acts for to approve one write, with its exact arguments."""
    principal = current_principal()
    access.writer(principal)
    body = json_object()
    refuse_unknown_fields(body, ("action", "params"))
    action = choice_field(body, "action", knowledge_approvals.ACTIONS, None)
    if action is None:
        raise ApiError(400, "FIELD_REQUIRED", "'action' is required.", field="action")
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        approval = knowledge_approvals.request(session, notebook, principal, action, body.get("params"))
        return knowledge_approvals.approval_json(approval), 201


@bp.get("/approvals")
def pending_approvals(notebook_id: str):  # type: ignore[no-untyped-def]
    """The caller's approvals still waiting (neither used nor expired), newest first."""
    principal = current_principal()
    with services().db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        return {"items": knowledge_approvals.shown(session, notebook, knowledge_approvals.pending(session, notebook, principal))}


@bp.get("/approvals/<approval_id>")
def read_approval(notebook_id: str, approval_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    with services().db.reader() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        return knowledge_approvals.approval_json(knowledge_approvals.get(session, notebook, principal, approval_id))


@bp.delete("/approvals/<approval_id>")
def decline_approval(notebook_id: str, approval_id: str):  # type: ignore[no-untyped-def]
    """The person declines, signed in like approving (the agent cannot withdraw what it is asked)."""
    principal = signed_in_person()
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        knowledge_approvals.decline(session, knowledge_approvals.get(session, notebook, principal, approval_id))
    return "", 204


@bp.post("/approvals/<approval_id>/approve")
def approve(notebook_id: str, approval_id: str):  # type: ignore[no-untyped-def]
    """The person approves, signed in (an API token, which an agent may hold, cannot): the
    approval is used (committed first), then the write runs on the same path as a person's edit,
    with the agent as its author."""
    principal = signed_in_person()
    access.writer(principal)
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        approval = knowledge_approvals.get(session, notebook, principal, approval_id)
        knowledge_approvals.take(session, approval)
        params = dict(approval.params)
    return _edit(notebook_id, principal, params["note_id"], params["expected_version_id"], params["block_key"],
                 params["text"], f"agent:{principal.user_id}")


def _edit(notebook_id: str, principal: Principal, note_id: str, expected: str, block_key: str, text: str, author: str):  # type: ignore[no-untyped-def]
    auto_sync = services().settings.knowledge_auto_sync
    return _changed(notebook_id, principal, lambda session, notebook: knowledge_edits.edit_block(
        session, notebook, note_id, expected_version_id=expected, block_key=block_key, text=text, author=author,
        auto_sync=auto_sync))


def _changed(notebook_id: str, principal: Principal, change: Callable[[Session, Notebook], knowledge_edits.Edited]):  # type: ignore[no-untyped-def]
    """Run ``change`` in one transaction, then send the event it made."""
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        edited = change(session, notebook)
        shown = {"status": edited.status, "source_note_version_id": edited.source_note_version_id,
                 "note": note_json(session, notebook.id, edited.note, edited.version)}
    if edited.event_id is not None:
        send_event(edited.event_id)
    return shown
