"""Durable hierarchical analysis through real processes (issue #16, docs/decisions/0018): `gnosi
serve`, real Redis, Celery workers for ingestion and for the `analysis` queue, over a notebook of
120 small real sources (SQuAD's Wikipedia paragraphs as Markdown notes).

One deployment and one notebook serve the whole module: an analysis over every source finishes and
cites many of them, every stored step stayed within the batch bounds (recomputed from what it
read), a cancel stops the steps, a SIGKILLed worker's analysis resumes without computing a
finished step again, and a finished result is unchanged, readable and still resolvable after
refreshes change the notebook and retention would have dropped its revision.
"""
from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from pipeline.analysis.offline import MIN_BATCH_CHARS
from support.analysis_live import (
    analysis_queue_length,
    by_level,
    parts_of,
    read_analysis,
    revision_chunks,
    squad_notes,
    start_analysis,
    step_lines,
    stored_counts,
    steps_done,
    wait_for_analysis,
    wait_for_steps,
    wait_until_quiet,
)
from support.live import Deployment, deployment
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

SOURCES = 120
PARAGRAPHS = 3  # per note: about 2,300 characters, three chunks
# Small bounds, for a few dozen steps over 120 three-paragraph notes: a map step reads at most
# 9,600 characters (the least the settings allow), and 24 items keeps a reduce step's twelve
# points (the offline engine keeps at most half a batch's items), so the result can span sources.
BATCH_ITEMS = 24
BATCH_CHARS = MIN_BATCH_CHARS
SETTINGS = {
    "GNOSI_ANALYSIS_BATCH_CHUNKS": str(BATCH_ITEMS),
    "GNOSI_ANALYSIS_BATCH_CHARS": str(BATCH_CHARS),
    # Retention keeps only the newest complete revision: the one a finished analysis reads is kept
    # only because the analysis pins it.
    "GNOSI_NOTEBOOK_COMPLETED_REVISION_RETENTION": "1",
    # The sweeper resends a killed worker's step once the analysis's lease lapsed; every resend
    # while no analysis worker runs counts an attempt, and a worker starts in 10-30 s here.
    "GNOSI_JOB_LEASE_SECONDS": "8",
    "GNOSI_SWEEP_INTERVAL_SECONDS": "1",
    "GNOSI_JOB_MAX_ATTEMPTS": "12",
}


@dataclass
class Live:
    d: Deployment
    vault: VaultBuilder
    notebook_id: str
    resource_ids: list[str]
    first_revision: str

    @property
    def base(self) -> str:
        return f"/api/notebooks/{self.notebook_id}"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("analysis")
    vault = VaultBuilder(tmp / "vault")
    ids = squad_notes(vault, SOURCES, PARAGRAPHS)
    with deployment(tmp, vault.root, vault.table_id, **SETTINGS) as d, ThreadPoolExecutor(3) as starting:
        # Ingestion and the sweeper (beat) in one process; analysis steps in another, which a test
        # kills. Started side by side: each takes seconds to import what it runs.
        for started in [
            starting.submit(d.start_web),
            starting.submit(d.start_worker, "ingest", "coordinator,extract,chunk", beat=True, concurrency=2),
            starting.submit(d.start_worker, "analysis-1", "analysis"),
        ]:
            started.result()
        notebook_id = d.api.create(ids, title="SQuAD notes")
        detail = d.api.wait_for_job(notebook_id, timeout=240)
        assert detail["job"]["state"] == "succeeded", detail
        revision_id = detail["active_revision"]["id"]
        assert d.query("SELECT count(DISTINCT resource_id) FROM chunks WHERE revision_id = ?", revision_id) == [(SOURCES,)]
        yield Live(d, vault, notebook_id, ids, revision_id)


@pytest.fixture(scope="module")
def summary(live: Live) -> dict[str, Any]:
    """A summary of the whole notebook, run to its end by the analysis worker."""
    started = start_analysis(live.d, live.notebook_id)
    assert started["state"] in ("queued", "running") and started["revision_id"] == live.first_revision
    shown = wait_for_analysis(live.d, live.notebook_id, started["id"])
    assert shown["state"] == "succeeded", shown
    return shown


def _resolves(live: Live, revision_id: str, point: dict[str, Any]) -> None:
    """Each citation of ``point`` resolves in the pinned revision to the chunk quoted, of its resource."""
    assert point["citations"], point
    for citation in point["citations"]:
        assert (citation["revision_id"], citation["resource_id"]) == (revision_id, point["resource_id"]), citation
        shown = live.d.api.get(f"{live.base}/evidence/{citation['chunk_id']}", revision=revision_id)
        assert shown.status_code == 200, shown.text
        evidence = shown.json()
        assert evidence["revision_id"] == revision_id and evidence["resource_id"] == point["resource_id"]
        assert point["text"] in evidence["text"], "a point quotes its chunk exactly"
        resolved = live.d.api.get("/api/citations/resolve", link=citation["cite"])
        assert resolved.status_code == 200, resolved.text
        assert resolved.json()["chunk_id"] == citation["chunk_id"] and resolved.json()["text"] == evidence["text"]


def test_an_analysis_of_120_sources_finishes_on_the_workers_and_cites_many_of_them(live: Live, summary: dict[str, Any]) -> None:
    d = live.d
    points = summary["result"]["points"]
    assert summary["revision_id"] == live.first_revision
    assert len(points) >= 8 and all(not point["removed"] for point in points)
    cited = {point["resource_id"] for point in points}
    assert len(cited) >= 8, f"the result quotes only {sorted(cited)}"
    for point in points:
        _resolves(live, summary["revision_id"], point)

    # Every level ran on the worker process: each planned step stored once, by the analysis worker.
    progress = summary["progress"]
    assert len(progress) >= 3 and progress[-1]["total"] == 1, progress
    assert all(level["done"] == level["total"] for level in progress)
    lines = step_lines(d.tmp, summary["id"])
    assert {line.log for line in lines} == {"worker-analysis-1.log"}
    assert stored_counts(lines) == Counter(dict.fromkeys(parts_of(d, summary["id"]), 1))

    # The map level read every chunk of every source, and its summaries quote most of the sources.
    parts = by_level(parts_of(d, summary["id"]))
    chunks = revision_chunks(d, summary["revision_id"])
    assert sorted(chunk for part in parts[0] for chunk in part.reads) == sorted(chunks)
    quoted = {point["resource_id"] for part in parts[0] for point in part.points or []}
    assert len(quoted) >= SOURCES * 2 // 3, f"the map level quotes {len(quoted)} of {SOURCES} sources"


def test_no_step_read_more_than_the_batch_bounds(live: Live, summary: dict[str, Any]) -> None:
    """Every stored step, map and reduce, recomputed from what it read (chunk texts from the
    chunks table; the points of the parts one level down), not from its stored counters."""
    d = live.d
    chunks = revision_chunks(d, summary["revision_id"])
    levels = by_level(parts_of(d, summary["id"]))
    assert [len(levels[level]) for level in sorted(levels)] == [level["total"] for level in summary["progress"]]
    assert len(levels[0]) >= 15, "small bounds make a few dozen steps"
    for level, parts in sorted(levels.items()):
        assert [part.ordinal for part in parts] == list(range(len(parts)))
        below = {part.ordinal: part for part in levels.get(level - 1, [])}
        for part in parts:
            assert part.points is not None, f"step {level}.{part.ordinal} has no points"
            if level == 0:
                read = [chunks[chunk_id] for chunk_id in part.reads]
                items, chars = len(read), sum(len(text) for _, text in read)
                readable = set(part.reads)
            else:
                read_points = [point for ordinal in part.reads for point in below[ordinal].points or []]
                items, chars = len(read_points), sum(len(point["text"]) for point in read_points)
                readable = {chunk for point in read_points for chunk in point["chunk_ids"]}
            where = f"step {level}.{part.ordinal}"
            assert items <= BATCH_ITEMS and chars <= BATCH_CHARS, f"{where} read {items} items, {chars} characters"
            assert (part.input_items, part.input_chars) == (items, chars), f"{where}'s stored counters"
            assert part.points and all(set(point["chunk_ids"]) <= readable for point in part.points), (
                f"{where} cites only what it read"
            )
        if level > 0:  # a reduce level reads every summary below once, in order
            assert [ordinal for part in parts for ordinal in part.reads] == sorted(below)
            assert len(parts) < len(below), "every level shrinks"
    assert len(levels[max(levels)]) == 1
    final = levels[max(levels)][0].points
    assert [point["text"] for point in final] and {p["text"] for p in final} == {
        p["text"] for p in summary["result"]["points"]
    }


def test_a_cancelled_analysis_computes_no_step_afterwards(live: Live) -> None:
    d = live.d
    analysis_id = start_analysis(d, live.notebook_id, {"kind": "briefing"})["id"]
    wait_for_steps(d, analysis_id, 3)
    cancel = d.api.post(f"{live.base}/analyses/{analysis_id}/cancel")
    assert cancel.status_code == 200 and cancel.json()["state"] in ("cancelling", "cancelled"), cancel.text
    waiting = analysis_queue_length(d)  # the map level's steps were all sent when it was planned
    shown = wait_for_analysis(d, live.notebook_id, analysis_id, timeout=60)
    assert shown["state"] == "cancelled" and shown["result"] is None
    at_cancel = steps_done(d, analysis_id)
    computed = len(step_lines(d.tmp, analysis_id))
    map_steps = shown["progress"][0]["total"]
    assert waiting > 0 and at_cancel < map_steps, "cancelled mid-way through the map level"

    wait_until_quiet(d, ["analysis-1"])  # every message left for it has been taken and dropped
    lines = step_lines(d.tmp, analysis_id)
    assert steps_done(d, analysis_id) == at_cancel
    # The one worker process runs one step at a time: at most the step it was computing when the
    # cancel landed ended after it, and that one could not store its points.
    assert len(lines) - computed <= 1 and all(line.outcome == "discarded" for line in lines[computed:]), lines[computed:]
    assert sum(stored_counts(lines).values()) == at_cancel
    assert read_analysis(d, live.notebook_id, analysis_id)["state"] == "cancelled"

    # Deleted, it goes with every step it stored.
    assert d.api.delete(f"{live.base}/analyses/{analysis_id}").status_code == 204
    assert d.api.get(f"{live.base}/analyses/{analysis_id}").status_code == 404
    assert d.query("SELECT count(*) FROM analysis_parts WHERE analysis_id = ?", analysis_id) == [(0,)]


def test_a_sigkilled_worker_resumes_without_recomputing_finished_steps(live: Live) -> None:
    d = live.d
    analysis_id = start_analysis(d, live.notebook_id, {"kind": "timeline"})["id"]
    wait_for_steps(d, analysis_id, 4)
    d.kill_worker("analysis-1", signal.SIGKILL)
    before = {key for key, part in parts_of(d, analysis_id).items() if part.points is not None}
    shown = read_analysis(d, live.notebook_id, analysis_id)
    assert shown["state"] == "running" and len(before) < sum(level["total"] for level in shown["progress"]), shown

    d.start_worker("analysis-2", "analysis")
    shown = wait_for_analysis(d, live.notebook_id, analysis_id, timeout=180)
    assert shown["state"] == "succeeded", shown
    assert shown["result"]["points"]

    parts = parts_of(d, analysis_id)
    lines = step_lines(d.tmp, analysis_id)
    assert all(part.points is not None for part in parts.values())
    assert [line for line in lines if line.outcome == "discarded"] == [], "one process at a time: nothing ran twice at once"
    stored = stored_counts(lines)
    assert set(stored) <= set(parts)
    # Counted from the logs. The one exception allowed: a step the killed worker stored in the
    # instant between its commit and its log line (it is then in `before`, and logged by no one).
    unlogged = [key for key in parts if stored[key] == 0]
    assert set(unlogged) <= before and len(unlogged) <= 1, unlogged
    assert all(stored[key] == 1 for key in parts if key not in unlogged), "every step stored exactly once"
    again = [line for line in lines if (line.level, line.ordinal) in before and line.log != "worker-analysis-1.log"]
    assert again == [], f"steps finished before the kill were computed again: {again}"
    assert any(line.log == "worker-analysis-2.log" for line in lines), "the second worker resumed the analysis"
    for point in shown["result"]["points"]:
        _resolves(live, shown["revision_id"], point)


def test_a_result_is_unchanged_after_a_refresh_and_readable_after_its_source_left(
    live: Live, summary: dict[str, Any]
) -> None:
    d = live.d
    path = f"{live.base}/analyses/{summary['id']}"
    before = read_analysis(d, live.notebook_id, summary["id"])
    cited = [point["resource_id"] for point in before["result"]["points"]]
    edited, removed = cited[0], next(resource for resource in cited if resource != cited[0])

    note = live.vault.root / "notes" / f"{edited}.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nAn added paragraph changes this note.\n", encoding="utf-8")
    refresh = d.api.post(f"{live.base}/refresh")
    assert refresh.json()["ingest"] == "queued", refresh.text
    detail = d.api.wait_for_job(live.notebook_id, job_id=refresh.json()["job"]["id"])
    assert detail["job"]["state"] == "succeeded" and detail["active_revision"]["id"] != summary["revision_id"]

    after = read_analysis(d, live.notebook_id, summary["id"])
    assert after == before, "a refresh changes no finished analysis"
    for point in after["result"]["points"]:
        _resolves(live, summary["revision_id"], point)

    assert d.api.delete(f"{live.base}/sources/{removed}").status_code == 204
    gone = d.api.get(path).json()
    assert [point["text"] for point in gone["result"]["points"]] == [point["text"] for point in before["result"]["points"]]
    for was, now in zip(before["result"]["points"], gone["result"]["points"]):
        if was["resource_id"] == removed:
            assert now == {**was, "removed": True, "citations": []}
        else:
            assert now == was
            _resolves(live, summary["revision_id"], now)


def test_retention_keeps_the_revision_an_analysis_reads(live: Live, summary: dict[str, Any]) -> None:
    d = live.d
    pinned = summary["revision_id"]
    cited = {point["resource_id"] for point in summary["result"]["points"]}
    changing = next(resource for resource in reversed(live.resource_ids) if resource not in cited)  # still a member
    for round_ in range(2):  # past what retention keeps (the newest complete revision)
        note = live.vault.root / "notes" / f"{changing}.md"
        note.write_text(note.read_text(encoding="utf-8") + f"\nRevision round {round_} adds this line.\n", encoding="utf-8")
        refresh = d.api.post(f"{live.base}/refresh").json()
        assert refresh["ingest"] == "queued", refresh
        assert d.api.wait_for_job(live.notebook_id, job_id=refresh["job"]["id"])["job"]["state"] == "succeeded"
    active = d.api.get(live.base).json()["active_revision"]
    complete = [row[0] for row in d.query(
        "SELECT id FROM revisions WHERE notebook_id = ? AND state = 'complete' ORDER BY number", live.notebook_id
    )]
    assert complete[-1] == active["id"] and active["number"] >= 3
    assert complete == [pinned, active["id"]], "retention dropped every other revision"

    shown = read_analysis(d, live.notebook_id, summary["id"])
    assert shown["revision_id"] == pinned and shown["state"] == "succeeded"
    assert [point["text"] for point in shown["result"]["points"]] == [point["text"] for point in summary["result"]["points"]]
    kept = [point for point in shown["result"]["points"] if not point["removed"]]
    assert kept
    for point in kept:
        _resolves(live, pinned, point)
