"""The LLM engine in the real service, against a scripted OpenAI-compatible server process."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from support.live import deployment
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration


def test_llm_answers_keep_only_chunk_ids_a_tool_returned(tmp_path: Path, fake_server) -> None:
    url, log = fake_server([
        {"text": "Owners send a sworn notification and the provider takes the material down "
                 "[{chunk:0}], as courts confirmed [{fake_chunk}].", "piece_chars": 7},
    ])
    vault = VaultBuilder(tmp_path / "vault")
    vault.pdf_record("dmca", "dmca.pdf")
    settings = {"GNOSI_LLM_BASE_URL": url, "GNOSI_LLM_MODEL": "fake-model", "GNOSI_LLM_API_KEY": "k"}
    with deployment(tmp_path, vault.root, vault.table_id, redis=False, **settings) as d:
        d.start_web()
        notebook_id = d.api.create(["dmca"])
        d.api.wait_for_job(notebook_id)
        status, events = d.api.chat({"notebook_id": notebook_id, "message": "What is the notice and takedown procedure?"})
    assert status == 200
    done = events[-1][1]
    assert events[-1][0] == "done" and done["status"] == "answered"
    assert len(done["citations"]) == 1 and done["citations"][0]["resource_id"] == "dmca"
    streamed = "".join(data["text"] for name, data in events if name == "token")
    assert "de4dbeef" not in streamed and "de4dbeef" not in done["text"]
    first_request = json.loads(log.read_text().splitlines()[0])
    assert first_request["model"] == "fake-model"
    assert any(m.get("role") == "tool" for m in first_request["messages"]), "a real search ran before the model"
    assert "untrusted" in first_request["messages"][0]["content"].lower() or "data" in first_request["messages"][0]["content"].lower()


def test_a_client_disconnect_stops_the_turn_and_stores_no_answer(tmp_path: Path, fake_server) -> None:
    url, _ = fake_server([{"text": "word " * 400, "piece_chars": 5, "delay": 0.05}])
    vault = VaultBuilder(tmp_path / "vault")
    vault.pdf_record("dmca", "dmca.pdf")
    settings = {"GNOSI_LLM_BASE_URL": url, "GNOSI_LLM_MODEL": "fake-model"}
    with deployment(tmp_path, vault.root, vault.table_id, redis=False, **settings) as d:
        d.start_web()
        notebook_id = d.api.create(["dmca"])
        d.api.wait_for_job(notebook_id)
        body = {"notebook_id": notebook_id, "message": "Tell me everything."}
        with d.api.http.stream("POST", "/api/chat", json=body) as response:
            tokens = 0
            for line in response.iter_lines():
                tokens += line.startswith("event: token")
                if tokens >= 3:
                    break
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            messages = d.api.get(f"/api/notebooks/{notebook_id}/conversation").json()["messages"]
            if messages:
                break
            time.sleep(0.2)
        time.sleep(2)
        messages = d.api.get(f"/api/notebooks/{notebook_id}/conversation").json()["messages"]
    assert [m["role"] for m in messages] == ["user"], "a stopped turn stores no partial answer"
