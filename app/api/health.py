"""Probes for process managers and load balancers, and metrics for Prometheus; no sign-in, and
nothing a caller could misuse (no ids, no content)."""
from __future__ import annotations

from flask import Blueprint, Response, current_app

from app.extensions import services
from app.metrics import CONTENT_TYPE, DurableCollector, exposition
from app.services.readiness import checks
from tasks.celery_app import ALL_QUEUES

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz():  # type: ignore[no-untyped-def]
    """The process serves requests (it reads nothing: a busy database must not fail it)."""
    return {"status": "ok"}


@bp.get("/readyz")
def readyz():  # type: ignore[no-untyped-def]
    """Whether the instance can do its work now (app.services.readiness); 503 when not."""
    found = checks(services(), current_app.extensions["celery"])
    body = {"status": "ready", "checks": {check.name: {"ok": check.ok, "detail": check.detail} for check in found}}
    if all(check.ok for check in found):
        return body
    failed = ", ".join(check.name for check in found if not check.ok)
    return {**body, "status": "not_ready", "code": "NOT_READY", "message": f"Not ready: {failed} failed."}, 503


@bp.get("/metrics")
def metrics():  # type: ignore[no-untyped-def]
    """Prometheus's text format (app.metrics): counts and durations only, no ids or content."""
    durable = DurableCollector(services().db, current_app.extensions["celery"], ALL_QUEUES)
    return Response(exposition(durable), content_type=CONTENT_TYPE)
