"""Recordings in the real service: the worker transcribes them (faster-whisper, the packaged base
model), an answer from a recording cites the time range the answer is spoken in, and the viewer's
player opens at the cited second with the transcript around it, the quote marked."""
from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from browser_support import Service, cited, open_citation, sign_in_with_token
from playwright.sync_api import expect
from support.live import deployment
from support.services import CORPUS, require, static_http_server
from support.vault import VaultBuilder

from pipeline.speech.models import missing
from pipeline.speech.settings import SpeechSettings


# Subtitles people wrote, attached as a file: timed like a transcript, but no machine wrote them.
CAPTIONS = """WEBVTT

00:00:01.000 --> 00:00:04.000
The path climbs through pine woods above the lake.

00:00:04.500 --> 00:00:09.000
Snow still lies on the northern slopes in June.
"""


@pytest.fixture(scope="module")
def recordings(tmp_path_factory) -> Iterator[tuple[Service, str]]:  # type: ignore[no-untyped-def]
    """A service of its own whose notebook holds the licence read in English then German, the
    LibriVox preamble as a video, and the JFK clip as a direct media URL, transcribed."""
    require(missing(SpeechSettings().model) is None, f"speech model: {missing(SpeechSettings().model)}")
    tmp = tmp_path_factory.mktemp("media")
    vault = VaultBuilder(tmp / "vault")
    vault.record("licence", "The MIT licence, read aloud", file=vault.attach_corpus("audio/multilingual.mp3"))
    vault.record("librivox", "Shakespeare on Scenery, opening", file=vault.attach_corpus("audio/sample_10s_video-mp4.mp4"))
    (vault.root / "files" / "captions.en.vtt").write_text(CAPTIONS, encoding="utf-8")
    vault.record("captions", "Captions of a mountain walk", file="files/captions.en.vtt")
    online = tmp / "online"
    online.mkdir()
    shutil.copyfile(CORPUS / "audio" / "jfk.flac", online / "jfk.flac")
    with ExitStack() as stack:
        served = stack.enter_context(static_http_server(online))
        vault.record("inaugural", "Inaugural address, online", link=f"{served}/jfk.flac")
        d = stack.enter_context(deployment(tmp, vault.root, vault.table_id, redis=False))
        d.start_web()
        notebook_id = d.api.create(["licence", "librivox", "inaugural", "captions"], title="Recordings")
        detail = d.api.wait_for_job(notebook_id, timeout=240)
        assert detail["job"]["state"] == "succeeded", detail
        yield Service(d, str(d.api.http.base_url).rstrip("/"), d.token, d.token, ""), notebook_id


PLAYER = """() => new Promise((resolve) => {
  const player = document.querySelector('[data-role=player]');
  const report = () => resolve({ tag: player.tagName, at: player.currentTime, ready: player.readyState, src: player.currentSrc });
  if (player.readyState >= 1) report(); else player.addEventListener('loadedmetadata', () => setTimeout(report, 50), { once: true });
})"""


def test_an_answer_from_a_recording_cites_when_it_is_said_and_the_player_opens_there(recordings, open_page, shot) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id = recordings
    citation = cited(service, notebook_id, "Was umfasst insbesondere das Recht an der Software?", "licence")
    locator = citation["locator"]
    assert locator["language"] == "de" and locator["transcript"] == "base", locator
    assert 29 <= locator["start"] < locator["end"] <= 60, locator  # the German half, after the English one
    assert "insbesondere" in citation["quote"], citation["quote"]

    evidence = service.deployment.api.get(
        f"/api/notebooks/{notebook_id}/evidence/{citation['chunk_id']}", revision=citation["revision_id"]
    ).json()
    transcript = evidence["media"]["transcript"]
    assert evidence["media"]["mime"] == "audio/mpeg"
    assert [part.get("cited", False) for part in transcript] == [False, True], transcript  # the English chunk before it
    assert transcript[0]["end"] <= locator["start"] + 1 and "Permission" in transcript[0]["text"]

    page = open_page("desktop")
    open_citation(page, service, notebook_id, citation)
    state = page.evaluate(PLAYER)
    assert state["tag"] == "AUDIO" and state["ready"] >= 1, state
    said = [span for span in locator["spoken"] if "insbesondere" in evidence["text"][span[0]:span[1]]]
    assert len(said) == 1 and said[0][2] > locator["start"] + 5, locator  # the quote's own sentence, mid-chunk
    assert state["at"] == pytest.approx(said[0][2], abs=0.5), state  # opens where the quoted words are said
    assert state["src"].endswith(f"#t={said[0][2]},{said[0][3]}"), state  # and plays them
    quoted = page.locator("[data-role=transcript] .transcript-part.cited")
    expect(quoted.locator("mark.highlight")).to_contain_text("insbesondere")
    expect(page.locator("[data-role=transcript] .transcript-part")).to_have_count(2)
    shot(page, "evidence-audio")

    page.locator("[data-role=transcript] .transcript-time").first.click()
    assert page.evaluate("() => document.querySelector('[data-role=player]').currentTime") < 1  # seeks to the earlier part


def test_a_video_plays_in_the_viewer_at_its_cited_second(recordings, open_page) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id = recordings
    citation = cited(service, notebook_id, "Which recordings are in the public domain?", "librivox")
    assert citation["locator"]["start"] < 10 and "public domain" in citation["quote"], citation

    page = open_page("desktop")
    open_citation(page, service, notebook_id, citation)
    state = page.evaluate(PLAYER)
    spoken = citation["locator"]["spoken"]
    assert state["tag"] == "VIDEO" and citation["locator"]["start"] <= state["at"] <= spoken[-1][3], state


def test_a_recording_fetched_from_a_url_is_transcribed_and_plays_at_its_own_address(recordings, open_page) -> None:  # type: ignore[no-untyped-def]
    """A direct media link: fetched like a web page (SSRF guard, size cap, validators), read by the
    media extractor; the service keeps no copy, so the citation plays the original at the second."""
    service, notebook_id = recordings
    citation = cited(service, notebook_id, "What did the president ask his fellow Americans?", "inaugural")
    assert "ask what you can do for your country" in citation["quote"], citation
    evidence = service.deployment.api.get(
        f"/api/notebooks/{notebook_id}/evidence/{citation['chunk_id']}", revision=citation["revision_id"]
    ).json()
    assert evidence["media"]["playable"] is False and evidence["media"]["mime"] == "audio/flac", evidence["media"]
    assert evidence["open_url"].endswith(f"/jfk.flac#t={int(citation['locator']['start'])}"), evidence["open_url"]

    page = open_page("desktop")
    open_citation(page, service, notebook_id, citation)
    original = page.locator("[data-role=original-player]")
    expect(original).to_have_attribute("href", re.compile(r"/jfk\.flac#t=\d"))
    expect(page.locator("[data-role=player]")).to_have_count(0)
    expect(page.locator("[data-role=transcript] .transcript-part.cited mark.highlight")).to_contain_text("your country")


def test_the_sources_panel_says_how_long_each_recording_plays_and_what_transcribed_it(recordings, open_page) -> None:  # type: ignore[no-untyped-def]
    service, notebook_id = recordings
    page = open_page("desktop")
    sign_in_with_token(page, service, service.alice_token, f"/notebooks/{notebook_id}")
    recording = page.locator("#panel-sources .source-item[data-resource-id=inaugural] [data-role=recording]")
    expect(recording).to_have_text("Recording, 0:11 · machine-transcribed (base)")
    expect(page.locator("#panel-sources .source-item[data-resource-id=licence] [data-role=recording]")).to_have_text(
        re.compile(r"^Recording, 0:59 · machine-transcribed \(base\)$")
    )
    expect(page.locator("#panel-sources .source-item[data-resource-id=captions] [data-role=recording]")).to_have_text(
        "Recording, 0:09 · transcript: subtitles file (en)"
    )
