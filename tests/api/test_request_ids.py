"""Every response names its request (``X-Request-ID``), the id its log lines carry (app/logs.py)."""
from __future__ import annotations

import logging

import pytest

from app.logs import IdsFilter, TextFormatter


def test_a_well_formed_client_id_is_kept_and_anything_else_replaced(world) -> None:
    kept = world.client.get("/api/notebooks", headers={**world.headers("alice"), "X-Request-ID": "trace-42.a:b"})
    assert kept.headers["X-Request-ID"] == "trace-42.a:b"
    for offered in ("", "a" * 65, "bad id", "x/../y"):
        response = world.client.get("/healthz", headers={"X-Request-ID": offered} if offered else {})
        made = response.headers["X-Request-ID"]
        assert made != offered and len(made) == 32


def test_lines_logged_in_a_request_carry_its_and_its_notebooks_ids(world, caplog: pytest.LogCaptureFixture) -> None:
    """Through the same filter and text format as the instance's handler."""
    caplog.handler.addFilter(IdsFilter())
    caplog.handler.setFormatter(TextFormatter("%(message)s"))
    with caplog.at_level(logging.INFO, logger="app.services.ingest"):
        created = world.client.post("/api/notebooks", json={"title": "N", "resource_ids": ["dmca"]},
                                    headers={**world.headers("alice"), "X-Request-ID": "req-1"})
        assert created.status_code == 201
        refreshed = world.client.post(f"/api/notebooks/{created.json['id']}/refresh",
                                      headers={**world.headers("alice"), "X-Request-ID": "req-2"})
        assert refreshed.status_code == 202
    lines = [caplog.handler.format(record) for record in caplog.records if record.name == "app.services.ingest"]
    assert lines[0].startswith("ingestion queued: job ") and "request_id=req-1" in lines[0]
    assert f"notebook_id={created.json['id']}" in lines[1] and "request_id=req-2" in lines[1]
