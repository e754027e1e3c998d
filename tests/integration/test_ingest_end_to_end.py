"""Real PDFs and a real URL in, through a real Celery worker, out as a searchable, citable revision.

Runs twice: on a throwaway redis-server with a separate worker process, and on the embedded broker
(`gnosi serve` alone, no Redis).
"""
from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from support.live import Api, running_service
from support.services import CORPUS, redis_server, static_http_server
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

GOOD_PDFS = {
    "dmca": "dmca.pdf",
    "geotopo": "GeoTopo-komprimiert.pdf",
    "tracemonkey": "tracemonkey.pdf",
    "naacl": "naacl06-shinyama.pdf",
    "irs": "i1040nr.pdf",
}
# A record title whose words occur nowhere in the PDF: the document's names are indexed beside
# each chunk (pipeline.chunk_context), so a question naming the document finds its pages.
RECORD_TITLES = {"irs": "Zephyrine household filing"}
BROKEN_PDFS = {"corrupt": ("invalid.pdf", "PDF_CORRUPT"), "encrypted": ("aes-256.pdf", "PDF_ENCRYPTED")}


@pytest.fixture(params=["redis", "embedded"])
def service(request, tmp_path: Path):  # type: ignore[no-untyped-def]
    with ExitStack() as stack:
        base_url = stack.enter_context(static_http_server(CORPUS / "html"))
        vault = VaultBuilder(tmp_path / "vault")
        for resource_id, pdf in GOOD_PDFS.items():
            vault.pdf_record(resource_id, pdf, title=RECORD_TITLES.get(resource_id, f"Paper {resource_id}"))
        for resource_id, (pdf, _) in BROKEN_PDFS.items():
            vault.pdf_record(resource_id, pdf)
        vault.record("web", "Mozilla on Wikipedia", link=f"{base_url}/wikipedia/source.html")
        vault.record("template", "Template", template=True, file=vault.attach_corpus("pdf/dmca.pdf"))
        vault.record("empty", "Nothing to cite", tags=["x"])
        broker = stack.enter_context(redis_server(tmp_path / "redis")).url if request.param == "redis" else ""
        api = stack.enter_context(running_service(tmp_path, vault.root, vault.table_id, broker))
        yield api


def _top(api: Api, notebook_id: str, query: str) -> dict:
    response = api.get(f"/api/notebooks/{notebook_id}/search", q=query, limit=5)
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert results, f"no results for {query!r}"
    return results[0]


def test_notebook_from_real_pdfs_and_url(service: Api) -> None:
    api = service
    catalogue = api.get("/api/notebooks/resources", per_page=200).json()
    listed = {item["resource_id"] for item in catalogue["items"]}
    assert "template" not in listed and "empty" not in listed
    assert catalogue["omitted"] == 2
    assert [(reason["code"], reason["count"]) for reason in catalogue["omitted_reasons"]] == [("TEMPLATE", 1), ("NO_SOURCE", 1)]

    ids = [*GOOD_PDFS, *BROKEN_PDFS, "web"]
    created = api.post(
        "/api/notebooks",
        {"title": "Corpus", "visibility": "private", "conversation_mode": "private", "resource_ids": ids},
    )
    assert created.status_code == 201, created.text
    notebook_id = created.json()["id"]

    detail = api.wait_for_job(notebook_id)
    assert detail["job"]["state"] == "succeeded", detail
    assert detail["active_revision"]["number"] == 1

    sources = api.get(f"/api/notebooks/{notebook_id}/sources").json()
    states = {item["resource_id"]: item for item in sources["items"]}
    assert sources["total"] == len(ids)
    for resource_id in [*GOOD_PDFS, "web"]:
        assert states[resource_id]["state"] == "available", states[resource_id]
    for resource_id, (_, code) in BROKEN_PDFS.items():
        item = states[resource_id]
        assert item["state"] == "error"
        assert item["sources"][0]["error"]["code"] == code
        assert item["error"] == item["sources"][0]["error"], "a resource says its first failing source's error, code and all"

    hit = _top(api, notebook_id, "notice and takedown procedure")
    assert hit["resource_id"] == "dmca"
    assert hit["locator"]["page"] == 12
    # A person follows open_url: the dashboard's evidence page of that revision, not the JSON.
    assert hit["open_url"] == f"/notebooks/{notebook_id}/evidence/{hit['chunk_id']}?revision={hit['revision_id']}"
    assert api.http.get(hit["open_url"]).headers["content-type"].startswith("text/html")

    hit = _top(api, notebook_id, "Abbildung eines Torus auf eine Sphäre")
    assert hit["resource_id"] == "geotopo"
    assert hit["locator"] == {**hit["locator"], "page": 40, "page_label": "37"}

    evidence = api.get(
        f"/api/notebooks/{notebook_id}/evidence/{hit['chunk_id']}", revision=hit["revision_id"]
    )
    assert evidence.status_code == 200, evidence.text
    body = evidence.json()
    assert "Torus auf eine Sphäre" in body["text"]
    assert body["locator"]["page"] == 40 and body["revision_id"] == hit["revision_id"]

    named = _top(api, notebook_id, "zephyrine filing")
    assert named["resource_id"] == "irs"
    assert "zephyrine" not in named["snippet"].lower()

    web = _top(api, notebook_id, "Mozilla Foundation Mozilla Corporation open source")
    assert web["resource_id"] == "web"
    assert web["locator"]["url"].endswith("/wikipedia/source.html")
    assert web["open_url"].startswith("http://127.0.0.1")
    fragment = web["locator"].get("fragment")
    assert web["open_url"].endswith(f"#{fragment}" if fragment else "/wikipedia/source.html")
