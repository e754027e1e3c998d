"""A job's progress counts resources, as the sources panel does (a resource may have several
sources), and names a resource still being indexed, in the order the sources were sent."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from steps.test_task_contract import ingest

if TYPE_CHECKING:
    from steps.conftest import Instance, Lab


def test_progress_counts_resources_not_sources(lab: Lab, launch: Callable[..., Instance]) -> None:
    two_files = [lab.vault.attach_corpus("pdf/kampo.pdf"), lab.vault.attach_corpus("pdf/multilang.pdf")]
    lab.vault.record("pair", "Two files", file=two_files)
    instance = launch()
    notebook_id, job = ingest(instance, ["pair", "naacl"])
    assert job.state == "succeeded", job.error
    sources = instance.sources(instance.notebook(notebook_id).active_revision_id)
    assert sorted(source.resource_id for source in sources) == ["naacl", "pair", "pair"]
    assert (job.done, job.total, job.current_resource_id) == (2, 2, None)
