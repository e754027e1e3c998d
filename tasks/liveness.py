"""Whether a worker of a role, on this host, answers through the broker.

Compose's healthcheck for the worker services: only web serves HTTP, so the workers cannot be
asked ``/readyz``. A ping is a control message that a worker's main process answers, not its
pool, so a worker busy with a long OCR task still answers, and one whose consumer is stuck or
that lost the broker does not. Every worker receives the broadcast; only the ones whose node name
matches the pattern reply, and the first reply ends the wait.
"""
from __future__ import annotations

from celery import Celery


def node_pattern(role: str, hostname: str) -> str:
    """Node names are ``<role>-<pid>@<host>`` (app/serve.py's ``worker_command``)."""
    return f"{role}-*@{hostname}"


def answering_nodes(celery_app: Celery, role: str, hostname: str, timeout: float) -> list[str]:
    replies = celery_app.control.ping(
        timeout=timeout, limit=1, pattern=node_pattern(role, hostname), matcher="glob",
    )
    return [node for reply in replies for node in reply]
