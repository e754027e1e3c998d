"""URL sources are re-checked after the TTL with ETag / Last-Modified / a body hash; an unchanged
check records an audit outcome and no new active revision; retention keeps exactly its windows."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from support.changing_server import Page, changing_server
from support.live import Deployment, deployment
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

TEXT = (
    "The {word} lighthouse keeper recorded every passing ship in a leather logbook. "
    "Storms in the northern channel were described in great detail for each season."
)


def _pages() -> dict[str, Page]:
    return {
        "etag.html": Page(TEXT.format(word="amber"), "etag"),
        "lastmod.html": Page(TEXT.format(word="cobalt"), "last_modified"),
        "plain.html": Page(TEXT.format(word="crimson"), "none"),
    }


def _refresh_and_wait(d: Deployment, notebook_id: str) -> dict:
    response = d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()
    assert response["ingest"] == "queued", response
    return d.api.wait_for_job(notebook_id, job_id=response["job"]["id"])


def _audit(d: Deployment) -> list[tuple[str, str]]:
    return d.query("SELECT resource_id, outcome FROM audit_outcomes ORDER BY id")


def test_validators_hash_and_audit_outcomes(tmp_path: Path) -> None:
    pages = _pages()
    with changing_server(pages) as base:
        vault = VaultBuilder(tmp_path / "vault")
        for name in pages:
            vault.record(name.split(".")[0], name, link=f"{base}/{name}")
        settings = {"GNOSI_NOTEBOOK_URL_REFRESH_TTL_SECONDS": "2"}
        with deployment(tmp_path, vault.root, vault.table_id, **settings) as d:
            d.start_web()
            d.start_worker("w", concurrency=2)
            notebook_id = d.api.create(["etag", "lastmod", "plain"])
            first = d.api.wait_for_job(notebook_id)["active_revision"]
            assert first["number"] == 1

            within_ttl = d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()
            assert within_ttl["ingest"] == "not_needed"
            assert len(pages["etag.html"].requests) == 1

            time.sleep(2.2)
            detail = _refresh_and_wait(d, notebook_id)
            assert detail["active_revision"] == first
            assert pages["etag.html"].requests[-1]["if-none-match"] == pages["etag.html"].etag
            assert pages["lastmod.html"].requests[-1]["if-modified-since"] == pages["lastmod.html"].last_modified
            assert sorted(_audit(d)[-3:]) == [("etag", "unchanged"), ("lastmod", "unchanged"), ("plain", "unchanged")]
            assert d.query("SELECT number, state FROM revisions ORDER BY number") == [(1, "complete"), (2, "audit")]
            again = d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()
            assert again["ingest"] == "not_needed", "an unchanged check restarts the TTL"

            pages["plain.html"].change(TEXT.format(word="violet"))
            time.sleep(2.2)
            detail = _refresh_and_wait(d, notebook_id)
            assert detail["active_revision"]["number"] == 3
            assert ("plain", "changed") in _audit(d)[-3:]
            hit = d.api.get(f"/api/notebooks/{notebook_id}/search", q="violet lighthouse").json()["results"][0]
            assert hit["resource_id"] == "plain" and hit["locator"]["url"] == f"{base}/plain.html"

            pages["etag.html"].change(TEXT.format(word="golden"))
            time.sleep(2.2)
            assert _refresh_and_wait(d, notebook_id)["active_revision"]["number"] == 4
            assert ("etag", "changed") in _audit(d)[-3:]


def test_retention_keeps_exactly_its_windows(tmp_path: Path) -> None:
    pages = {"plain.html": Page(TEXT.format(word="v0"), "none")}
    with changing_server(pages) as base:
        vault = VaultBuilder(tmp_path / "vault")
        vault.record("plain", "plain", link=f"{base}/plain.html")
        settings = {
            "GNOSI_NOTEBOOK_URL_REFRESH_TTL_SECONDS": "0",
            "GNOSI_NOTEBOOK_COMPLETED_REVISION_RETENTION": "2",
            "GNOSI_NOTEBOOK_AUDIT_REVISION_RETENTION": "1",
        }
        with deployment(tmp_path, vault.root, vault.table_id, **settings) as d:
            d.start_web()
            d.start_worker("w")
            notebook_id = d.api.create(["plain"])
            d.api.wait_for_job(notebook_id)
            for version in range(1, 4):
                pages["plain.html"].change(TEXT.format(word=f"v{version}"))
                _refresh_and_wait(d, notebook_id)
            _refresh_and_wait(d, notebook_id)
            _refresh_and_wait(d, notebook_id)
            active = d.api.get(f"/api/notebooks/{notebook_id}").json()["active_revision"]
            assert active["number"] == 4
            assert d.query("SELECT number, state FROM revisions ORDER BY number") == [
                (3, "complete"), (4, "complete"), (6, "audit"),
            ]
            kept = {row[0] for row in d.query("SELECT id FROM revisions")}
            assert {row[0] for row in d.query("SELECT DISTINCT revision_id FROM chunks")} <= kept
            assert d.query("SELECT count(*) FROM chunks_fts") == d.query("SELECT count(*) FROM chunks")
            assert d.query("SELECT count(*) FROM chunk_vectors") == d.query("SELECT count(*) FROM chunks")
            assert len({row[0] for row in d.query("SELECT job_id FROM audit_outcomes")}) == 1


def test_a_per_resource_retry_copies_a_url_past_its_ttl_without_fetching_it(tmp_path: Path) -> None:
    pages = {"plain.html": Page(TEXT.format(word="amber"), "none")}
    with changing_server(pages) as base:
        vault = VaultBuilder(tmp_path / "vault")
        vault.record("plain", "plain", link=f"{base}/plain.html")
        vault.pdf_record("dmca", "dmca.pdf")
        with deployment(tmp_path, vault.root, vault.table_id, redis=False,
                        GNOSI_NOTEBOOK_URL_REFRESH_TTL_SECONDS="0") as d:
            d.start_web()
            notebook_id = d.api.create(["plain", "dmca"])
            d.api.wait_for_job(notebook_id)
            assert len(pages["plain.html"].requests) == 1
            copied_sql = (  # in the newest revision, activated or kept for audit
                "SELECT s.checked_at, s.chunks_revision_id, s.chunks_source_id FROM sources s"
                " JOIN revisions r ON r.id = s.revision_id WHERE s.resource_id = 'plain'"
                " ORDER BY r.number DESC LIMIT 1"
            )
            before = d.query(copied_sql)

            retry = d.api.post(f"/api/notebooks/{notebook_id}/sources/dmca/refresh").json()
            detail = d.api.wait_for_job(notebook_id, job_id=retry["job"]["id"])
            assert detail["job"]["state"] == "succeeded"
            assert d.query("SELECT max(number) FROM revisions") == [(2,)]
            assert len(pages["plain.html"].requests) == 1, "the page past its TTL was copied, not fetched"
            assert d.query(copied_sql) == before, "same evidence and the same last check"
            hit = d.api.get(f"/api/notebooks/{notebook_id}/search", q="amber lighthouse").json()["results"][0]
            assert hit["resource_id"] == "plain"

            assert _refresh_and_wait(d, notebook_id)["job"]["state"] == "succeeded"
            assert len(pages["plain.html"].requests) == 2, "still due: the next refresh checks it"
