"""Ending the leases of a worker known to be dead: only its live leases, never another owner's; a
late result does not revive an ended lease; recovery clears what the dead worker said it did."""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from storage import jobs
from storage.db import Database
from storage.migrate import upgrade
from storage.models import Job, utcnow
from support.notebook_rows import private_notebook

VAULT = "v" * 32
DEAD = "gnosi-embedded@"


def test_only_live_leases_of_the_dead_owner_end(tmp_path: Path) -> None:
    upgrade(tmp_path / "n.sqlite3")
    db = Database(tmp_path / "n.sqlite3")
    later, earlier = utcnow() + timedelta(minutes=5), utcnow() - timedelta(minutes=5)
    rows = {
        "dead-running": ("running", "gnosi-embedded@host/41", later),
        "dead-cancelling": ("cancelling", "gnosi-embedded@other-host/42", later),
        "dead-finished": ("succeeded", "gnosi-embedded@host/41", later),
        "dead-expired": ("running", "gnosi-embedded@host/41", earlier),
        "alive-elsewhere": ("running", "gnosi-123@host/123", later),
    }
    with db.session() as session:
        notebook = private_notebook(session, VAULT)
        for job_id, (state, owner, expires) in rows.items():
            session.add(Job(id=job_id, vault_hash=VAULT, workspace_id="w", notebook_id=notebook.id, kind=jobs.INGEST,
                            state=state, params={}, lease_owner=owner, lease_expires_at=expires,
                            activity="OCR: page 2 (2 of 9)"))

    with db.session() as session:
        assert jobs.expire_leases_of(session, DEAD) == 2
    with db.reader() as session:
        recoverable = {job.id for job in jobs.recoverable(session, queued_before=earlier)}
        alive = session.get(Job, "alive-elsewhere")
    assert recoverable == {"dead-running", "dead-cancelling", "dead-expired"}
    assert alive is not None and alive.lease_expires_at == later

    # A result that arrives after the restart (its message had outlived the worker) must not hide
    # the loss of the messages the dead worker had taken: an ended lease is recovery's to renew.
    with db.session() as session:
        jobs.heartbeat(session, "dead-running", timedelta(minutes=5))
        jobs.heartbeat(session, "alive-elsewhere", timedelta(minutes=10))
    with db.reader() as session:
        assert "dead-running" in {job.id for job in jobs.recoverable(session, queued_before=earlier)}
        assert session.get(Job, "alive-elsewhere").lease_expires_at > later
    with db.session() as session:
        jobs.renew(session, "dead-running", timedelta(minutes=5))
    with db.reader() as session:
        assert "dead-running" not in {job.id for job in jobs.recoverable(session, queued_before=earlier)}
        assert session.get(Job, "dead-running").activity is None, "the page the dead worker was reading"
        assert session.get(Job, "alive-elsewhere").activity == "OCR: page 2 (2 of 9)"
    db.dispose()
