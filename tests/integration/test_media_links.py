"""A direct media link through the whole service (Redis, the web process, a worker process, real
yt-dlp and faster-whisper): probed and downloaded once, transcribed, cited to the moment; a
refresh with its metadata unchanged downloads nothing and records an audit outcome; a changed
recording is downloaded and transcribed again, a new chunking recipe only probes it; a live
stream is refused with its reason."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipeline.speech.models import missing
from pipeline.speech.settings import SpeechSettings
from support.live import Deployment, deployment
from support.media_server import LIVE_PLAYLIST, Served, media_server
from support.services import CORPUS, require, stop
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

AUDIO = CORPUS / "audio"


def _refresh(d: Deployment, notebook_id: str) -> dict:
    response = d.api.post(f"/api/notebooks/{notebook_id}/refresh").json()
    assert response["ingest"] == "queued", response
    return d.api.wait_for_job(notebook_id, job_id=response["job"]["id"])


def _source(d: Deployment, notebook_id: str, resource_id: str) -> dict:
    items = d.api.get(f"/api/notebooks/{notebook_id}/sources").json()["items"]
    [item] = [item for item in items if item["resource_id"] == resource_id]
    return item["sources"][0]


def _cited_start(d: Deployment, notebook_id: str, query: str) -> tuple[float, float, str]:
    hit = d.api.get(f"/api/notebooks/{notebook_id}/search", q=query).json()["results"][0]
    evidence = d.api.get(f"/api/notebooks/{notebook_id}/evidence/{hit['chunk_id']}", revision=hit["revision_id"]).json()
    return hit["locator"]["start"], hit["locator"]["end"], evidence["open_url"]


def test_a_media_link_is_downloaded_once_and_again_only_when_it_changes(tmp_path: Path) -> None:
    require(missing(SpeechSettings().model) is None, f"speech model: {missing(SpeechSettings().model)}")
    files = {
        "talk.mp3": Served((AUDIO / "sample_10s.mp3").read_bytes(), "audio/mpeg"),
        "live.m3u8": Served(LIVE_PLAYLIST, "application/vnd.apple.mpegurl"),
    }
    talk = files["talk.mp3"]
    with media_server(files) as base:
        vault = VaultBuilder(tmp_path / "vault")
        vault.record("talk", "A recorded talk", link=f"{base}/talk.mp3")
        vault.record("live", "A stream still on air", link=f"{base}/live.m3u8")
        settings = {"GNOSI_NOTEBOOK_URL_REFRESH_TTL_SECONDS": "2", "GNOSI_URL_ALLOWLIST": "127.0.0.1"}
        with deployment(tmp_path, vault.root, vault.table_id, **settings) as d:
            d.start_web()
            d.start_worker("w", concurrency=1)
            notebook_id = d.api.create(["talk", "live"])
            first = d.api.wait_for_job(notebook_id)["active_revision"]
            source = _source(d, notebook_id, "talk")
            assert (source["state"], source["mime"], source["transcribed_by"]) == ("available", "audio/mpeg", "base"), source
            assert 9.5 < source["duration_seconds"] < 10.5
            assert talk.requests == ["GET", "GET"], "probe, then one download"
            live = _source(d, notebook_id, "live")
            assert (live["state"], live["error"]["code"]) == ("error", "MEDIA_LIVE"), live
            start, end, open_url = _cited_start(d, notebook_id, "LibriVox recording public domain")
            assert start < 9.96 and end > 5.28, (start, end)  # the sentence is said from 5.28 s to 9.96 s
            assert open_url == f"{base}/talk.mp3#t={int(start)}"

            time.sleep(2.2)
            detail = _refresh(d, notebook_id)
            assert detail["active_revision"] == first
            assert talk.requests == ["GET", "GET", "GET"], "the unchanged recording was downloaded again"
            audit = d.query("SELECT resource_id, outcome FROM audit_outcomes WHERE resource_id = 'talk' ORDER BY id")
            assert audit[-1] == ("talk", "unchanged")

            talk.replace((AUDIO / "jfk.flac").read_bytes())  # a new recording at the same address
            talk.content_type = "audio/flac"
            time.sleep(2.2)
            detail = _refresh(d, notebook_id)
            assert detail["active_revision"]["number"] > first["number"]
            assert talk.requests[3:] == ["GET", "GET"], talk.requests
            assert 10.5 < _source(d, notebook_id, "talk")["duration_seconds"] < 11.5
            assert d.query("SELECT outcome FROM audit_outcomes WHERE resource_id = 'talk' ORDER BY id")[-1] == ("changed",)

            # A new chunking recipe: the due recording is probed, not downloaded, and chunked again
            # from its cached transcript.
            d.env.update(GNOSI_CHUNK_MAX_CHARS="500", GNOSI_CHUNK_OVERLAP_CHARS="50")
            d.kill_worker("w")
            stop(d.web)
            d.start_web()
            d.start_worker("w", concurrency=1)
            time.sleep(2.2)
            asked = len(talk.requests)
            revision = _refresh(d, notebook_id)["active_revision"]["id"]
            assert talk.requests[asked:] == ["GET"], "a recording was downloaded again for a new chunking recipe"
            assert d.query("SELECT chunking FROM sources WHERE revision_id = ? AND resource_id = 'talk'", revision) == [
                ("chunks 500/50; vectors hashing-v1",)
            ]
