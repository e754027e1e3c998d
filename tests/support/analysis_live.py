"""What the live analysis tests (tests/integration/test_analysis_durability.py) share: a notebook
of many small real sources (SQuAD's Wikipedia paragraphs, written into the vault as Markdown notes
at test time), the worker logs' account of every analysis step, and the rows an analysis stored."""
from __future__ import annotations

import json
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.live import Deployment
from support.services import CORPUS
from support.vault import VaultBuilder

SQUAD = CORPUS / "qa" / "squad_v1.1_dev" / "corpus.jsonl"
ENDED = ("succeeded", "failed", "cancelled")
# tasks/analysis.py logs this line for every step it computed (stored, or discarded when another
# run stored first or the analysis stopped meanwhile).
_STEP = re.compile(r"analysis (?P<id>\w+): step (?P<level>\d+)\.(?P<ordinal>\d+) computed, (?P<outcome>stored|discarded)")
_TASK = re.compile(r"Task (?P<name>analysis\.\w+)\[(?P<task>[0-9a-f-]+)\] (?P<what>received|succeeded|failed|raised|retry)")


def squad_articles() -> list[tuple[str, list[str]]]:
    """SQuAD v1.1 dev's 48 articles: (title, paragraphs in order)."""
    articles: dict[int, tuple[str, list[str]]] = {}
    with SQUAD.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            meta = row["metadata"]
            articles.setdefault(meta["article_index"], (row["title"], []))[1].append(row["text"])
    return [articles[index] for index in sorted(articles)]


def squad_notes(vault: VaultBuilder, count: int, paragraphs: int = 2) -> list[str]:
    """``count`` records, each attaching a Markdown note of ``paragraphs`` consecutive paragraphs
    of one article (round robin over the articles, so neighbouring notes differ in subject)."""
    articles = squad_articles()
    folder = vault.root / "notes"
    folder.mkdir(exist_ok=True)
    ids = []
    for i in range(count):
        title, texts = articles[i % len(articles)]
        part = i // len(articles)
        chosen = texts[part * paragraphs:(part + 1) * paragraphs]
        assert len(chosen) == paragraphs, f"{title} has too few paragraphs for note {i}"
        name = f"note-{i:03d}"
        (folder / f"{name}.md").write_text(f"# {title} ({part + 1})\n\n" + "\n\n".join(chosen) + "\n", encoding="utf-8")
        ids.append(vault.record(name, f"{title}, part {part + 1}", file=f"notes/{name}.md"))
    return ids


@dataclass(frozen=True)
class StepLine:
    log: str  # the worker log's name (worker-<name>.log)
    analysis_id: str
    level: int
    ordinal: int
    outcome: str  # stored | discarded


def step_lines(tmp: Path, analysis_id: str) -> list[StepLine]:
    """Every "step computed" line the workers logged for ``analysis_id``."""
    found = []
    for path in sorted(tmp.glob("worker-*.log")):
        for match in _STEP.finditer(path.read_text(errors="replace")):
            if match["id"] == analysis_id:
                found.append(StepLine(path.name, analysis_id, int(match["level"]), int(match["ordinal"]), match["outcome"]))
    return found


def stored_counts(lines: list[StepLine]) -> Counter[tuple[int, int]]:
    return Counter((line.level, line.ordinal) for line in lines if line.outcome == "stored")


def unfinished_analysis_tasks(log: Path) -> set[str]:
    """Analysis task messages a worker received and has not finished (yet)."""
    states: dict[str, str] = {}
    for match in _TASK.finditer(log.read_text(errors="replace")):
        if match["what"] == "received":
            states.setdefault(match["task"], "received")
        else:
            states[match["task"]] = match["what"]
    return {task for task, state in states.items() if state == "received"}


def analysis_queue_length(d: Deployment) -> int:
    import redis

    assert d.broker is not None
    return int(redis.Redis.from_url(d.broker.url).llen("analysis"))


def wait_until_quiet(d: Deployment, workers: list[str], timeout: float = 60) -> None:
    """Until the analysis queue is empty and ``workers`` finished every analysis message they took."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if analysis_queue_length(d) == 0 and not any(
            unfinished_analysis_tasks(d.tmp / f"worker-{name}.log") for name in workers
        ):
            time.sleep(0.3)  # a message taken between the two reads shows up as received by now
            if analysis_queue_length(d) == 0 and not any(
                unfinished_analysis_tasks(d.tmp / f"worker-{name}.log") for name in workers
            ):
                return
        time.sleep(0.2)
    raise TimeoutError("the analysis queue did not drain")


def start_analysis(d: Deployment, notebook_id: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    response = d.api.post(f"/api/notebooks/{notebook_id}/analyses", body or {"kind": "summary"})
    assert response.status_code == 202, response.text
    return response.json()


def read_analysis(d: Deployment, notebook_id: str, analysis_id: str) -> dict[str, Any]:
    response = d.api.get(f"/api/notebooks/{notebook_id}/analyses/{analysis_id}")
    assert response.status_code == 200, response.text
    return response.json()


def wait_for_analysis(d: Deployment, notebook_id: str, analysis_id: str, states: tuple[str, ...] = ENDED,
                      timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    shown = read_analysis(d, notebook_id, analysis_id)
    while shown["state"] not in states:
        if time.monotonic() > deadline:
            raise TimeoutError(f"analysis {analysis_id} still {shown['state']}: {shown['progress']}")
        time.sleep(0.2)
        shown = read_analysis(d, notebook_id, analysis_id)
    return shown


def steps_done(d: Deployment, analysis_id: str) -> int:
    return d.query("SELECT count(*) FROM analysis_parts WHERE analysis_id = ? AND points IS NOT NULL", analysis_id)[0][0]


def wait_for_steps(d: Deployment, analysis_id: str, at_least: int, timeout: float = 120) -> int:
    """Until ``at_least`` steps of the analysis stored their points (polled often: steps are quick)."""
    deadline = time.monotonic() + timeout
    while (done := steps_done(d, analysis_id)) < at_least:
        if time.monotonic() > deadline:
            raise TimeoutError(f"analysis {analysis_id}: {done} steps done, waited for {at_least}")
        time.sleep(0.02)
    return done


@dataclass(frozen=True)
class Part:
    level: int
    ordinal: int
    reads: list[Any]
    input_items: int
    input_chars: int
    points: list[dict[str, Any]] | None


def parts_of(d: Deployment, analysis_id: str) -> dict[tuple[int, int], Part]:
    rows = d.query(
        "SELECT level, ordinal, reads, input_items, input_chars, points FROM analysis_parts WHERE analysis_id = ?",
        analysis_id,
    )
    return {
        (level, ordinal): Part(level, ordinal, json.loads(reads), items, chars, None if points is None else json.loads(points))
        for level, ordinal, reads, items, chars, points in rows
    }


def revision_chunks(d: Deployment, revision_id: str) -> dict[str, tuple[str, str]]:
    """The chunks a revision serves (its own and those it shares with an earlier revision):
    chunk id → (resource id, text), read straight from the tables."""
    rows = d.query(
        "SELECT c.chunk_id, c.resource_id, c.text FROM sources s JOIN chunks c"
        " ON c.revision_id = s.chunks_revision_id AND c.source_id = s.chunks_source_id WHERE s.revision_id = ?",
        revision_id,
    )
    return {chunk_id: (resource_id, text) for chunk_id, resource_id, text in rows}


def by_level(parts: dict[tuple[int, int], Part]) -> dict[int, list[Part]]:
    levels: dict[int, list[Part]] = defaultdict(list)
    for key in sorted(parts):
        levels[key[0]].append(parts[key])
    return dict(levels)
