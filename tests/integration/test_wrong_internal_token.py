"""An extract worker that can never reach /internal (a wrong shared secret) ends its sources in
`error` with the reason, and the job finishes: no "running 6 of 8" until lease recovery, which
would only send the same work back to it."""
from __future__ import annotations

from pathlib import Path

import pytest

from support.live import deployment
from support.services import static_http_server
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration


def test_a_worker_with_a_wrong_internal_token_errors_its_sources_and_the_job_ends(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "page.html").write_text(
        "<html><body><main><p>Lighthouse keepers logged every passing ship, season after season.</p></main></body></html>"
    )
    with static_http_server(site) as base:
        vault = VaultBuilder(tmp_path / "vault")
        vault.pdf_record("dmca", "dmca.pdf", title="DMCA summary")
        vault.record("page", "A web page", link=f"{base}/page.html")
        with deployment(tmp_path, vault.root, vault.table_id) as d:
            d.start_web()
            d.start_worker("coordinator", "coordinator")
            d.start_worker("extract", "extract,chunk", GNOSI_INTERNAL_TOKEN="not-the-shared-secret")
            notebook_id = d.api.create(["dmca", "page"])
            detail = d.api.wait_for_job(notebook_id, timeout=90)  # the lease is 300 s
            assert detail["job"]["state"] == "succeeded", detail
            items = d.api.get(f"/api/notebooks/{notebook_id}/sources").json()["items"]
            errors = {i["resource_id"]: i["sources"][0]["error"] for i in items}
            assert {e["code"] for e in errors.values()} == {"INTERNAL_AUTH_INVALID"}, errors
            assert all("GNOSI_INTERNAL_TOKEN" in e["message"] for e in errors.values())
