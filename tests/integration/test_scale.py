"""Scale-out and load: stateless extract workers without the database, and a 300-resource job."""
from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from support.live import deployment
from support.services import CORPUS, static_http_server
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

SMALL_PDFS = [
    "dmca.pdf", "naacl06-shinyama.pdf", "odf_presentation_01.odp.pdf", "multilang.pdf", "puertos1.pdf",
    "2023-06-20-PV.pdf", "nics-background-checks-2015-11.pdf", "kampo.pdf", "jo.pdf", "tableformer-2203.00274.pdf",
]
HTML_PAGES = ["wikipedia", "wikipedia-3", "ietf-1", "v8-blog", "google-sre-book-1", "qq"]


def test_two_stateless_extract_workers_ingest_one_notebook(tmp_path: Path) -> None:
    vault = VaultBuilder(tmp_path / "vault")
    ids = [vault.pdf_record(f"pdf-{i}", pdf) for i, pdf in enumerate(SMALL_PDFS)]
    with deployment(tmp_path, vault.root, vault.table_id) as d:
        d.start_web()
        d.start_worker("coordinator", "coordinator", beat=True)
        for i in range(2):
            d.start_stateless_extractor(f"extract-{i}")
        notebook_id = d.api.create(ids)
        detail = d.api.wait_for_job(notebook_id)
        assert detail["job"]["state"] == "succeeded"
        items = d.api.get(f"/api/notebooks/{notebook_id}/sources").json()["items"]
        assert {i["state"] for i in items} == {"available"}
        for i in range(2):
            log = (tmp_path / f"worker-extract-{i}.log").read_text()
            assert "Task ingest.extract[" in log, f"extract worker {i} did no work"
            assert not list((tmp_path / f"extract-{i}").rglob("*.sqlite3"))
        hit = d.api.get(f"/api/notebooks/{notebook_id}/search", q="notice and takedown procedure").json()["results"][0]
        assert hit["locator"]["page"] == 12


def test_a_300_resource_job_accounts_for_every_source(tmp_path: Path) -> None:
    with ExitStack() as stack:
        base = stack.enter_context(static_http_server(CORPUS / "html"))
        vault = VaultBuilder(tmp_path / "vault")
        ids = []
        files = [vault.attach_corpus(f"pdf/{pdf}") for pdf in SMALL_PDFS]
        for i in range(120):
            ids.append(vault.record(f"pdf-{i:03d}", f"Paper {i}", file=files[i % len(files)]))
        notes = vault.root / "notes"
        notes.mkdir()
        for i in range(90):
            (notes / f"note-{i:03d}.md").write_text(f"# Note {i}\n\nObservation number {i} about topic {i % 7}.\n")
            ids.append(vault.record(f"note-{i:03d}", f"Note {i}", file=f"notes/note-{i:03d}.md"))
        for i in range(90):
            page = HTML_PAGES[i % len(HTML_PAGES)]
            ids.append(vault.record(f"web-{i:03d}", f"Page {i}", link=f"{base}/{page}/source.html?copy={i}"))
        d = stack.enter_context(deployment(tmp_path, vault.root, vault.table_id))
        d.start_web()
        d.start_worker("w", concurrency=2, beat=True)
        notebook_id = d.api.create(ids)
        detail = d.api.wait_for_job(notebook_id, timeout=600)
        assert detail["job"]["state"] == "succeeded" and detail["job"]["done"] == 300
        revision_id = detail["active_revision"]["id"]
        states = dict(d.query("SELECT state, count(*) FROM sources WHERE revision_id = ? GROUP BY state", revision_id))
        assert states == {"available": 300}
        assert d.query("SELECT count(DISTINCT resource_id) FROM chunks WHERE revision_id = ?", revision_id) == [(300,)]
        listing = d.api.get(f"/api/notebooks/{notebook_id}/sources", per_page=200).json()
        assert listing["total"] == 300
