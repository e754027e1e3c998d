"""A file touched without a change of its bytes (a sync client, a restore, ``touch``) is hashed
once, not at every opening and question from then on: the check remembers the new stat, on the
active revision when nothing changed and on the new revision's carried-over source otherwise."""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from steps.test_task_contract import counting, ingest, open_notebook, wrap

if TYPE_CHECKING:
    from steps.conftest import Instance, Lab


def touch(path: Path) -> None:
    """Move the modification time ten seconds on; the bytes stay as they are."""
    mtime_ns = path.stat().st_mtime_ns + 10_000_000_000
    os.utime(path, ns=(mtime_ns, mtime_ns))


def test_a_touched_file_is_hashed_once(
    lab: Lab, launch: Callable[..., Instance], monkeypatch: pytest.MonkeyPatch
) -> None:
    instance = launch(GNOSI_OPENS_PER_MINUTE="60")
    notebook_id, job = ingest(instance)
    assert job.state == "succeeded", job.error
    hashed: list[tuple[Any, ...]] = []
    wrap(monkeypatch, "pipeline.fingerprint.file_sha256", counting(hashed))

    files = lab.vault.root / "files"
    touch(files / "dmca.pdf")
    assert [open_notebook(instance, notebook_id) for _ in range(3)] == ["not_needed"] * 3
    assert [Path(args[0]).name for args in hashed] == ["dmca.pdf"]

    # Touched again, and seen first by a job's own planning (re-extracting one resource does not
    # check first). The job's revision is kept as an audit record (naacl's evidence is the same),
    # so the active revision must learn the new stat too, not only the copy.
    touch(files / "dmca.pdf")
    response = instance.call("POST", f"/api/notebooks/{notebook_id}/sources/naacl/refresh")
    assert response.status_code == 202 and response.json["ingest"] == "queued", response.json
    refreshed = instance.wait_job_end(response.json["job"]["id"])
    assert refreshed.state == "succeeded" and refreshed.total == 1, "only the refreshed resource is extracted again"
    hashed.clear()
    assert [open_notebook(instance, notebook_id) for _ in range(2)] == ["not_needed"] * 2
    assert hashed == [], "a carried-over source kept the stat of an older observation"
