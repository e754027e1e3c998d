"""A new chunking recipe re-chunks a notebook from cached extractions, in the distributed layout
(real Redis, a coordinator process, a database-free extract process): no extractor runs again;
and cached extractions go with the last revision that used them."""
from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from support.live import deployment
from support.services import CORPUS, static_http_server, stop
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration


def test_a_chunking_change_chunks_again_without_extracting_again(tmp_path: Path) -> None:
    with ExitStack() as stack:
        page = stack.enter_context(static_http_server(CORPUS / "html")) + "/wikipedia/source.html"
        vault = VaultBuilder(tmp_path / "vault")
        ids = [vault.pdf_record("dmca", "dmca.pdf"), vault.pdf_record("naacl", "naacl06-shinyama.pdf")]
        ids.append(vault.record("web", "A web page", link=page))
        d = stack.enter_context(deployment(
            tmp_path, vault.root, vault.table_id,
            GNOSI_URL_ALLOWLIST="127.0.0.1", GNOSI_NOTEBOOK_COMPLETED_REVISION_RETENTION="1",
        ))
        d.start_web()
        d.start_worker("coordinator", "coordinator", beat=True)
        d.start_stateless_extractor("extract")
        notebook_id = d.api.create(ids)
        first = d.api.wait_for_job(notebook_id)["active_revision"]["id"]
        assert d.extractor_calls() == 3
        chunks_before = d.query("SELECT count(*) FROM chunks WHERE revision_id = ?", first)[0][0]

        # An instance setting: the web process plans a refresh with it, the coordinator sends it on.
        d.env.update(GNOSI_CHUNK_MAX_CHARS="500", GNOSI_CHUNK_OVERLAP_CHARS="50")
        d.kill_worker("coordinator")
        stop(d.web)
        d.start_web()
        d.start_worker("coordinator", "coordinator", beat=True)
        assert d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()["ingest"] == "queued"
        detail = d.api.wait_for_job(notebook_id)
        second = detail["active_revision"]["id"]

        assert detail["job"]["state"] == "succeeded" and second != first
        assert d.extractor_calls() == 3  # every source chunked from its cached extraction
        assert d.query("SELECT DISTINCT state, chunking FROM sources WHERE revision_id = ?", second) == [
            ("available", "chunks 500/50; vectors hashing-v1")
        ]
        assert d.query("SELECT max(length(text)) FROM chunks WHERE revision_id = ?", second)[0][0] <= 500
        assert d.query("SELECT count(*) FROM chunks WHERE revision_id = ?", second)[0][0] > chunks_before
        hit = d.api.get(f"/api/notebooks/{notebook_id}/search", q="notice and takedown procedure").json()["results"][0]
        assert hit["locator"]["page"] == 12

        # A changed file: its old extraction is referenced by no kept revision any more.
        old_key = d.query("SELECT extraction_key FROM sources WHERE revision_id = ? AND resource_id = 'naacl'", second)[0][0]
        (vault.root / "files" / "naacl06-shinyama.pdf").write_bytes((CORPUS / "pdf" / "dmca.pdf").read_bytes())
        assert d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()["ingest"] == "queued"
        d.api.wait_for_job(notebook_id)
        cache = Path(d.env["LOCAL_DATA"]) / "system" / "extractions"
        kept = {row[0] for row in d.query("SELECT extraction_key FROM sources")}
        assert old_key not in kept and {path.name for path in cache.glob("??/*")} == kept
