"""The coordinator writes an activated revision's vector files, searches map them, and the sweeper
deletes them with their notebook, or has them written again when they went missing
(storage.vector_files)."""
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from steps.conftest import wait_for
from steps.test_task_contract import ingest
from storage import lexical_index
from storage.vector_files import MANIFEST

if TYPE_CHECKING:
    from steps.conftest import Instance


def test_activation_writes_the_files_searches_use_and_deletion_sweeps_them(
    launch: Callable[..., Instance], monkeypatch: pytest.MonkeyPatch
) -> None:
    instance = launch()
    notebook_id, job = ingest(instance)
    assert job.state == "succeeded", job.error
    svc = instance.app.extensions["gnosi"]
    revision_id = instance.notebook(notebook_id).active_revision_id
    folder = svc.vector_files.folder(revision_id, svc.embedder)
    # The activation writes them just after the job ends succeeded, before anything searches.
    wait_for(lambda: (folder / MANIFEST).is_file(), "the activated revision's vector files")
    (pack,) = svc.vector_files.pack_folders(revision_id, svc.embedder)
    wait_for(lambda: (pack / lexical_index.FILE).is_file(), "the activated revision's own full-text index")
    assert (pack / "vectors.npy").is_file()

    searched_in: list[Path] = []
    candidates = lexical_index.candidates
    monkeypatch.setattr(lexical_index, "candidates",
                        lambda packs, *args: searched_in.extend(p.path for p in packs) or candidates(packs, *args))
    response = instance.call("GET", f"/api/notebooks/{notebook_id}/search", query_string={"q": "notice and takedown"})
    assert response.status_code == 200 and response.json["results"]
    assert searched_in == [pack / lexical_index.FILE]

    assert instance.call("DELETE", f"/api/notebooks/{notebook_id}").status_code in (200, 204)
    instance.celery.tasks["sweep_jobs"]()
    assert not folder.exists() and pack.is_dir()  # a pack is kept a while for the revision about to name it
    long_ago = time.time() - 3600
    os.utime(pack, (long_ago, long_ago))
    instance.celery.tasks["sweep_jobs"]()
    assert not pack.exists()


def test_the_sweeper_has_missing_files_written_again(launch: Callable[..., Instance]) -> None:
    """A restore brings the rows back but not the files (backups leave derived data out)."""
    instance = launch()
    notebook_id, job = ingest(instance)
    assert job.state == "succeeded", job.error
    svc = instance.app.extensions["gnosi"]
    revision_id = instance.notebook(notebook_id).active_revision_id
    folder = svc.vector_files.folder(revision_id, svc.embedder)
    wait_for(lambda: (folder / MANIFEST).is_file(), "the activated revision's vector files")
    shutil.rmtree(folder)
    shutil.rmtree(svc.vector_files.packs)
    instance.celery.tasks["sweep_jobs"]()
    wait_for(lambda: (folder / MANIFEST).is_file(), "the vector files written again by the coordinator")
    wait_for(lambda: svc.vector_files.lexical_packs(revision_id, svc.embedder) is not None,
             "and the revision's own full-text index")
