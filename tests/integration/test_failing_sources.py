"""A resource that keeps failing backs off instead of re-queuing a job on every opening, and a
check that finds nothing new keeps no copy of the chunks (issue #11, item 4)."""
from __future__ import annotations

from pathlib import Path

import pytest

from support.live import deployment
from support.services import free_port
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration


def test_failing_resource_backs_off_and_audits_store_no_chunk_copies(tmp_path: Path) -> None:
    vault = VaultBuilder(tmp_path / "vault")
    vault.pdf_record("dmca", "dmca.pdf", title="DMCA summary")
    vault.record("gone", "A page nobody serves", link=f"http://127.0.0.1:{free_port()}/gone.html")
    with deployment(tmp_path, vault.root, vault.table_id, redis=False, GNOSI_OPENS_PER_MINUTE="1000") as d:
        d.start_web()
        notebook_id = d.api.create(["dmca", "gone"])
        d.api.wait_for_job(notebook_id)
        items = {i["resource_id"]: i for i in d.api.get(f"/api/notebooks/{notebook_id}/sources").json()["items"]}
        assert items["gone"]["state"] == "error" and items["gone"]["failures"] == 1 and items["gone"]["retry_at"]
        assert items["dmca"]["state"] == "available" and items["dmca"]["retry_at"] is None
        chunks = d.query("SELECT count(*) FROM chunks")[0][0]

        for _ in range(3):
            opened = d.api.get(f"/api/notebooks/{notebook_id}", open=1).json()
            assert opened["ingest"] == "not_needed", opened
        assert d.query("SELECT count(*) FROM jobs")[0][0] == 1

        refresh = d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()
        assert refresh["ingest"] == "queued"  # an explicit refresh retries at once
        d.api.wait_for_job(notebook_id, job_id=refresh["job"]["id"])
        assert [state for (state,) in d.query("SELECT state FROM revisions ORDER BY number")] == ["complete", "audit"]
        assert d.query("SELECT count(*) FROM chunks")[0][0] == chunks
        items = {i["resource_id"]: i for i in d.api.get(f"/api/notebooks/{notebook_id}/sources").json()["items"]}
        assert items["gone"]["failures"] == 2
        hits = d.api.get(f"/api/notebooks/{notebook_id}/search", q="copyright").json()["results"]
        assert hits and all(h["resource_id"] == "dmca" for h in hits)
