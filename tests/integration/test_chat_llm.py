"""The LLM engine in the real service, against a scripted OpenAI-compatible server process."""
from __future__ import annotations

import json
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
