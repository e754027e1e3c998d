"""`gnosi backup` of a running instance, then `gnosi restore` into a fresh LOCAL_DATA: the restored
instance serves the same notebook, conversation and citations, and a citation opens the same
page of the same bytes."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from click.testing import CliRunner

from app.cli import main
from steps.test_task_contract import ingest

if TYPE_CHECKING:
    from steps.conftest import Instance, Lab

QUESTION = "What is the notice and takedown procedure?"


def ask(instance: Instance, notebook_id: str) -> dict[str, Any]:
    """One chat turn over SSE; the ``done`` event's data."""
    response = instance.call("POST", "/api/chat", json={"notebook_id": notebook_id, "message": QUESTION})
    assert response.status_code == 200, response.get_data(as_text=True)
    events = [block.split("\n", 1) for block in response.get_data(as_text=True).strip().split("\n\n")]
    return next(json.loads(data.removeprefix("data: ")) for name, data in events if name == "event: done")


def opened(instance: Instance, notebook_id: str, citation: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """What following a citation shows: its evidence (page, passage, viewer link) and the file's bytes."""
    query = f"revision={citation['revision_id']}"
    evidence = instance.call("GET", f"/api/notebooks/{notebook_id}/evidence/{citation['chunk_id']}?{query}")
    assert evidence.status_code == 200, evidence.json
    file = instance.call("GET", f"/api/notebooks/{notebook_id}/sources/{citation['source_id']}/file?{query}")
    assert file.status_code == 200, file.json
    return evidence.json, file.get_data()


def cli(local_data: Path, *args: str) -> str:
    result = CliRunner().invoke(main, list(args), env={"LOCAL_DATA": str(local_data)}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_restored_backup_opens_the_same_citation_on_the_same_page(
    lab: Lab, launch: Callable[..., Instance]
) -> None:
    first = launch()
    notebook_id, job = ingest(first)
    assert job.state == "succeeded", job.error
    answer = ask(first, notebook_id)
    assert answer["citations"], answer
    citation = answer["citations"][0]
    assert citation["locator"].get("page"), citation
    before = opened(first, notebook_id, citation)
    conversation = first.call("GET", f"/api/notebooks/{notebook_id}/conversation").json

    backup = lab.tmp_path / "backup"
    assert "backed up" in cli(lab.local_data, "backup", str(backup))  # while the instance runs
    restored = lab.tmp_path / "restored-local-data"
    assert "restored" in cli(restored, "restore", str(backup))

    second = launch(LOCAL_DATA=str(restored))
    assert second.settings.local_data == restored
    assert second.call("GET", f"/api/notebooks/{notebook_id}/conversation").json == conversation
    assert opened(second, notebook_id, citation) == before
    assert second.call("GET", f"/api/notebooks/{notebook_id}/search?q=takedown").json["results"]
