"""Durable ingestion with real Redis and real worker processes: coalescing, cancellation, lost
evidence packs, incremental reuse, retry, stale, removal (crashes: test_crash_recovery.py)."""
from __future__ import annotations

import shutil
import signal
import time
from pathlib import Path

import pytest
import redis

from support.big_vault import FAST, big_ids, big_vault
from support.live import Deployment, deployment
from support.services import CORPUS
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration


def job_rows(d: Deployment, notebook_id: str) -> list[tuple]:
    return d.query("SELECT id, state FROM jobs WHERE notebook_id = ? ORDER BY created_at", notebook_id)


def test_twenty_rapid_refreshes_coalesce(tmp_path: Path) -> None:
    vault = big_vault(tmp_path)
    with deployment(tmp_path, vault.root, vault.table_id) as d:
        d.start_web()
        d.start_worker("w", concurrency=2)
        notebook_id = d.api.create(["dmca", *big_ids()[:4]])
        outcomes = [d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()["ingest"] for _ in range(20)]
        assert set(outcomes) == {"coalesced"}
        d.api.wait_until(notebook_id, lambda nb: nb["job"]["state"] == "succeeded" and not nb["job"]["rerun_requested"])
        d.api.wait_until(notebook_id, lambda nb: all(state == "succeeded" for _, state in job_rows(d, notebook_id)))
        assert len(job_rows(d, notebook_id)) <= 2


def test_cancel_mid_job_keeps_the_last_complete_revision(tmp_path: Path) -> None:
    vault = big_vault(tmp_path)
    with deployment(tmp_path, vault.root, vault.table_id) as d:
        d.start_web()
        d.start_worker("w")
        notebook_id = d.api.create(["dmca"])
        first = d.api.wait_for_job(notebook_id)["active_revision"]
        d.api.post(f"/api/notebooks/{notebook_id}/sources", {"resource_ids": big_ids()})
        d.api.wait_until(notebook_id, lambda nb: nb["job"]["state"] == "running" and nb["job"]["done"] >= 1)
        cancelled = d.api.post(f"/api/notebooks/{notebook_id}/refresh/cancel")
        assert cancelled.status_code == 202 and cancelled.json()["job"]["state"] in ("cancelling", "cancelled")
        detail = d.api.wait_until(notebook_id, lambda nb: nb["job"]["state"] == "cancelled")
        assert detail["active_revision"] == first
        assert d.query("SELECT state FROM revisions WHERE number = 2") == [("cancelled",)]
        hit = d.api.get(f"/api/notebooks/{notebook_id}/search", q="notice and takedown").json()["results"][0]
        assert hit["revision_id"] == first["id"]
        sources = {i["resource_id"]: i["state"] for i in d.api.get(f"/api/notebooks/{notebook_id}/sources").json()["items"]}
        assert sources["dmca"] == "available" and sources["big-00"] == "pending"


def test_cancelling_the_first_ingestion_blocks_until_a_refresh_succeeds(tmp_path: Path) -> None:
    vault = big_vault(tmp_path)
    with deployment(tmp_path, vault.root, vault.table_id) as d:
        d.start_web()
        d.start_worker("w")
        notebook_id = d.api.create(big_ids())
        d.api.wait_until(notebook_id, lambda nb: nb["job"]["done"] >= 1)
        d.api.post(f"/api/notebooks/{notebook_id}/refresh/cancel")
        detail = d.api.wait_until(notebook_id, lambda nb: nb["job"]["state"] == "cancelled")
        assert detail["active_revision"] is None
        blocked = d.api.get(f"/api/notebooks/{notebook_id}/search", q="Torus")
        assert blocked.status_code == 409 and blocked.json()["code"] == "NO_ACTIVE_REVISION"
        assert d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()["ingest"] == "queued"
        assert d.api.wait_for_job(notebook_id)["active_revision"]["number"] == 2


def test_lost_evidence_packs_are_extracted_again_and_the_spool_empties(tmp_path: Path) -> None:
    """Packs deleted before the coordinator stored them: those sources stay ``indexing`` and lease
    recovery sends their extraction again; nothing is stored twice and no pack is left behind."""
    vault = big_vault(tmp_path)
    with deployment(tmp_path, vault.root, vault.table_id, **FAST) as d:
        spool = Path(d.env["LOCAL_DATA"]) / "system" / "spool"
        d.start_web()
        d.start_worker("coordinator", "coordinator", beat=True)
        notebook_id = d.api.create(["dmca", "big-00", "big-01"])
        assert d.broker is not None
        queue = redis.Redis.from_url(d.broker.url)
        deadline = time.monotonic() + 60
        while queue.llen("extract") < 3 and time.monotonic() < deadline:  # all orders sent, none taken
            time.sleep(0.1)
        d.kill_worker("coordinator", signal.SIGKILL)
        d.start_worker("extract", "extract,chunk")
        deadline = time.monotonic() + 120
        while len(list(spool.rglob("*.pack"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(list(spool.rglob("*.pack"))) == 3
        shutil.rmtree(spool)
        d.start_worker("coordinator", "coordinator", beat=True)
        detail = d.api.wait_for_job(notebook_id, timeout=120)
        assert detail["job"]["state"] == "succeeded"
        assert "left for recovery: no pack" in (tmp_path / "worker-coordinator.log").read_text()
        revision_id = detail["active_revision"]["id"]
        assert d.query("SELECT DISTINCT state FROM sources WHERE revision_id = ?", revision_id) == [("available",)]
        assert d.query(
            "SELECT count(*) = count(DISTINCT source_id || ordinal) FROM chunks WHERE revision_id = ?", revision_id
        ) == [(1,)]
        deadline = time.monotonic() + 30
        while spool.exists() and any(spool.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not spool.exists() or not any(spool.iterdir())


def _replace(vault: VaultBuilder, rel_path: str, data: bytes) -> None:
    (vault.root / rel_path).write_bytes(data)


def test_incremental_refresh_retry_stale_and_removal(tmp_path: Path) -> None:
    vault = VaultBuilder(tmp_path / "vault")
    for resource_id, pdf in (("dmca", "dmca.pdf"), ("trace", "tracemonkey.pdf"), ("naacl", "naacl06-shinyama.pdf")):
        vault.pdf_record(resource_id, pdf)
    with deployment(tmp_path, vault.root, vault.table_id) as d:
        d.start_web()
        d.start_worker("w", concurrency=2)
        notebook_id = d.api.create(["dmca", "trace", "naacl"])
        d.api.wait_for_job(notebook_id)
        assert d.extract_calls() == 3

        assert d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()["ingest"] == "not_needed"

        # A renamed record: a new revision whose copied chunks carry the new name, no extraction.
        vault.record("naacl", "Zephyrine paraphrase notes", file="files/naacl06-shinyama.pdf")
        assert d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()["ingest"] == "queued"
        assert d.api.wait_for_job(notebook_id)["active_revision"]["number"] == 2
        assert d.extract_calls() == 3
        named = d.api.get(f"/api/notebooks/{notebook_id}/search", q="zephyrine").json()["results"]
        assert named and {hit["resource_id"] for hit in named} == {"naacl"}

        _replace(vault, "files/naacl06-shinyama.pdf", (CORPUS / "pdf" / "odf_presentation_01.odp.pdf").read_bytes())
        assert d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()["ingest"] == "queued"
        assert d.api.wait_for_job(notebook_id)["active_revision"]["number"] == 3
        assert d.extract_calls() == 4

        retry = d.api.post(f"/api/notebooks/{notebook_id}/sources/dmca/refresh").json()
        assert retry["ingest"] == "queued"
        d.api.wait_for_job(notebook_id, job_id=retry["job"]["id"])
        assert d.extract_calls() == 5

        _replace(vault, "files/tracemonkey.pdf", b"%PDF-1.4 this is no longer a PDF")
        d.api.post(f"/api/notebooks/{notebook_id}/refresh")
        detail = d.api.wait_for_job(notebook_id)
        items = {i["resource_id"]: i for i in d.api.get(f"/api/notebooks/{notebook_id}/sources").json()["items"]}
        assert items["trace"]["state"] == "stale"
        assert items["trace"]["sources"][0]["error"]["code"] == "PDF_CORRUPT"
        hit = d.api.get(f"/api/notebooks/{notebook_id}/search", q="a program follows a path that cannot be compiled into a trace").json()["results"][0]
        assert hit["resource_id"] == "trace" and hit["locator"]["page"] == 6

        dmca_hit = d.api.get(f"/api/notebooks/{notebook_id}/search", q="notice and takedown procedure").json()["results"][0]
        assert dmca_hit["resource_id"] == "dmca"
        assert d.api.delete(f"/api/notebooks/{notebook_id}/sources/dmca").status_code == 204
        results = d.api.get(f"/api/notebooks/{notebook_id}/search", q="notice and takedown procedure").json()["results"]
        assert all(r["resource_id"] != "dmca" for r in results)
        gone = d.api.get(f"/api/notebooks/{notebook_id}/evidence/{dmca_hit['chunk_id']}", revision=dmca_hit["revision_id"])
        assert gone.status_code == 404
        assert d.api.get(f"/api/notebooks/{notebook_id}").json()["active_revision"] == detail["active_revision"]


