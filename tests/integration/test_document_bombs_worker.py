"""Document bombs through a real `gnosi serve` and its Celery worker: the job finishes, each bomb's
source ends with its reason (or is cut with a note), good sources are unaffected, and no process
of the service swells towards what the bombs would have taken (issue #11, item 5)."""
from __future__ import annotations

from pathlib import Path

import pytest

from support import bombs
from support.live import deployment
from support.processes import tree_peak_kib
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

# resource id: (file name, bytes, state, error code)
BOMBS = {
    "flate": ("flate.pdf", lambda: bombs.flate_bomb_pdf(1024), "error", "EXTRACT_MEMORY_LIMIT"),
    "flood": ("flood.pdf", lambda: bombs.text_flood_pdf(draws=20_000), "error", "EXTRACT_MEMORY_LIMIT"),
    "tree": ("tree.pdf", lambda: bombs.text_flood_pdf(draws=1, pages=200_000), "error", "EXTRACT_TOO_MANY_PAGES"),
    "page": ("page.pdf", lambda: bombs.text_flood_pdf(draws=200), "available", "EXTRACT_PAGE_TRUNCATED"),
    "web": ("page.html", lambda: bombs.distinct_paragraphs_html(300_000), "error", "EXTRACT_MEMORY_LIMIT"),
}
SERVICE_PEAK_MIB = 512  # gunicorn and Celery processes measure ~140 MiB; the bombs asked for GBs


def test_bombs_end_with_their_reasons_and_the_job_finishes(tmp_path: Path) -> None:
    vault = VaultBuilder(tmp_path / "vault")
    for resource_id, (name, build, _, _) in BOMBS.items():
        (vault.root / "files" / name).write_bytes(build())
        vault.record(resource_id, f"Bomb {resource_id}", file=f"files/{name}")
    vault.pdf_record("dmca", "dmca.pdf")
    with deployment(tmp_path, vault.root, vault.table_id, redis=False, GNOSI_EXTRACT_MEMORY_MB="256") as d:
        d.start_web()
        notebook_id = d.api.create([*BOMBS, "dmca"])
        assert d.api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
        assert d.web is not None
        peak = tree_peak_kib(d.web.pid) // 1024
        items = {item["resource_id"]: item for item in d.api.get(f"/api/notebooks/{notebook_id}/sources").json()["items"]}
        hits = d.api.get(f"/api/notebooks/{notebook_id}/search", q="notice and takedown procedure", limit=3).json()
    for resource_id, (_, _, state, code) in BOMBS.items():
        source = items[resource_id]["sources"][0]
        assert (source["state"], source["error"]["code"]) == (state, code), items[resource_id]
        assert "GNOSI_EXTRACT_" in source["error"]["message"] and items[resource_id]["error"]
    assert items["dmca"]["state"] == "available" and items["dmca"]["sources"][0]["error"] is None
    assert hits["results"][0]["resource_id"] == "dmca"
    assert peak < SERVICE_PEAK_MIB, peak
