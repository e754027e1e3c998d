"""A scripted OpenAI-compatible chat server that streams exactly what a test tells it to.

Run it as its own process: ``python tests/support/fake_openai_server.py --port P --script S.json
[--log L.jsonl]``. It serves ``POST /v1/chat/completions`` with ``"stream": true`` as server-sent
events in OpenAI's ``chat.completion.chunk`` format, ending with ``data: [DONE]``. Request N (from
0) plays ``turns[N]`` of the script (the last turn repeats when the script runs out); every
request body is appended to the log as one JSON line, so a test can check what the client sent.

A turn is an object with any of:

* ``"text"``: the assistant content, streamed in pieces of ``"piece_chars"`` characters (default 4).
  ``{chunk:N}`` becomes the ``chunk_id`` of the N-th item of the latest tool result in the request
  (tool results are JSON, as the engine renders them); ``{fake_chunk}`` a well-formed chunk id no
  tool ever returned; ``{chunk_sentence:N}`` the first sentence of that item's text (evidence is
  found nested too, as in an analysis's points); ``{analysis_id}`` the first ``analysis_id`` in the
  latest tool result; ``{result:KEY}`` the first value of ``KEY`` in it (outer objects first, as
  a read note's ``version_id`` before its blocks'). For an analysis step (its inputs are JSON in the user message, see
  ``pipeline.analysis.prompts``), ``{sentence:N}`` becomes the first sentence of input ``ref`` N.
* ``"tool_calls"``: a list of ``{"name", "arguments"}`` (``arguments``: a JSON string, with the same
  placeholders), streamed OpenAI-style: ``id`` and ``name`` first, then the arguments in pieces of
  ``"piece_chars"`` characters, so one call is split over several chunks.
* ``"status"``: an HTTP error status to answer instead (with an OpenAI-style error body).
* ``"delay"``: seconds to sleep before each streamed chunk (to test cancellation).
* ``"match"``: a substring of the request's system message. A turn with one is played for every
  request whose system message has it (the first such turn), outside the count; the others play
  in turn. So one script answers two kinds of request that arrive in any order (a knowledge note
  and its judge).

For a knowledge note (its window is JSON in the user message, see ``pipeline.knowledge.prompts``),
``{unit_title}`` becomes the unit's title, ``{paragraph_sentence}`` the first sentence of the
window's first paragraph (its first block when it has none), escaped for a JSON string, and
``{paragraph_ref}`` that block's ``ref``. For a concept module (its claims are JSON in the user
message, see ``pipeline.knowledge.concept_prompts``), ``{claim:N}`` becomes the text of claim
``ref`` N, escaped for a JSON string.
"""
from __future__ import annotations

import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FAKE_CHUNK_ID = "ch_" + "de4dbeef" * 2 + "0bad"
_RESULT_FIELD = re.compile(r"\{result:(\w+)\}")


class ScriptedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes: no chunked encoding
    script: list[dict[str, Any]] = []
    log_path: Path | None = None
    counter = 0
    lock = threading.Lock()

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        with self.lock:
            turn = _matching(self.script, body.get("messages", []))
            if turn is None:
                played = [turn for turn in self.script if "match" not in turn] or [{"status": 404}]
                turn = played[min(type(self).counter, len(played) - 1)]
                type(self).counter += 1
            if self.log_path:
                with self.log_path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(body) + "\n")
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(404, "not found")
        elif "status" in turn:
            self._error(turn["status"], "scripted failure")
        else:
            self._stream(turn, body)

    def _error(self, status: int, message: str) -> None:
        payload = json.dumps({"error": {"message": message, "type": "fake", "code": status}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, turn: dict[str, Any], body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        model = body.get("model", "fake")
        size = int(turn.get("piece_chars", 4))
        delay = float(turn.get("delay", 0))
        try:
            self._send(model, {"role": "assistant", "content": ""}, None, delay)
            text = _fill(turn.get("text", ""), body)
            for start in range(0, len(text), size):
                self._send(model, {"content": text[start : start + size]}, None, delay)
            calls = turn.get("tool_calls", [])
            for index, call in enumerate(calls):
                head = {
                    "index": index,
                    "id": f"call_{index}",
                    "type": "function",
                    "function": {"name": call["name"], "arguments": ""},
                }
                self._send(model, {"tool_calls": [head]}, None, delay)
                arguments = _fill(call.get("arguments", "{}"), body)
                for start in range(0, len(arguments), size):
                    piece = {"index": index, "function": {"arguments": arguments[start : start + size]}}
                    self._send(model, {"tool_calls": [piece]}, None, delay)
            self._send(model, {}, "tool_calls" if calls else "stop", delay)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away: that is what cancellation tests do

    def _send(self, model: str, delta: dict[str, Any], finish_reason: str | None, delay: float) -> None:
        if delay:
            time.sleep(delay)
        chunk = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (inherited name)
        """Stay quiet: tests read the request log, not stderr."""


def _matching(script: list[dict[str, Any]], messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    return next((turn for turn in script if "match" in turn and turn["match"] in system), None)


def _fill(template: str, body: dict[str, Any]) -> str:
    """Replace the placeholders (see the module docstring)."""
    text = template.replace("{fake_chunk}", FAKE_CHUNK_ID)
    if "{unit_title}" in text or "{paragraph_" in text:
        window = _user_json(body.get("messages", []))
        blocks = [block for block in window.get("blocks") or [] if isinstance(block, dict)]
        paragraph = next((block for block in blocks if block.get("kind") == "paragraph"), blocks[0] if blocks else {})
        escaped = {"{unit_title}": str((window.get("unit") or {}).get("title", "")),
                   "{paragraph_sentence}": _first_sentence(paragraph.get("text", ""))}
        for placeholder, value in escaped.items():
            text = text.replace(placeholder, json.dumps(value)[1:-1])
        text = text.replace("{paragraph_ref}", str(paragraph.get("ref", 1)))
    for ref, item in enumerate(_user_items(body.get("messages", []), "inputs"), start=1):
        text = text.replace(f"{{sentence:{ref}}}", _first_sentence(item.get("text", "")))
    for ref, item in enumerate(_user_items(body.get("messages", []), "claims"), start=1):
        text = text.replace(f"{{claim:{ref}}}", json.dumps(str(item.get("text", "")))[1:-1])
    if "{chunk" not in text and "{analysis_id}" not in text and "{result:" not in text:
        return text
    found = _nested_dicts(_latest_tool_result(body.get("messages", [])))
    text = _RESULT_FIELD.sub(lambda m: next((str(item[m[1]]) for item in found if m[1] in item), ""), text)
    evidence = [item for item in found if "chunk_id" in item]
    for index, item in enumerate(evidence):
        text = text.replace(f"{{chunk:{index}}}", item.get("chunk_id", ""))
        text = text.replace(f"{{chunk_sentence:{index}}}", _first_sentence(item.get("text", "")))
    analysis_ids = [item["analysis_id"] for item in found if "analysis_id" in item]
    return text.replace("{analysis_id}", analysis_ids[0] if analysis_ids else "")


def _first_sentence(text: Any) -> str:
    return re.split(r"(?<=[.!?])\s", str(text).strip(), maxsplit=1)[0]


def _latest_tool_result(messages: list[dict[str, Any]]) -> Any:
    for message in reversed(messages):
        if message.get("role") == "tool":
            try:
                return json.loads(message.get("content") or "null")
            except ValueError:
                return None
    return None


def _nested_dicts(value: Any) -> list[dict[str, Any]]:
    """Every object in ``value``, outer ones first (a search's items, an analysis and its points'
    evidence)."""
    if isinstance(value, list):
        return [found for item in value for found in _nested_dicts(item)]
    if isinstance(value, dict):
        return [value, *(found for item in value.values() for found in _nested_dicts(item))]
    return []


def _user_items(messages: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The objects listed under ``name`` in the user message's JSON (an analysis step's inputs,
    a module's claims)."""
    return [item for item in _user_json(messages).get(name) or [] if isinstance(item, dict)]


def _user_json(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The latest user message as a JSON object (empty when it is none)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            try:
                content = json.loads(message.get("content") or "null")
            except ValueError:
                return {}
            return content if isinstance(content, dict) else {}
    return {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--script", type=Path, required=True)
    parser.add_argument("--log", type=Path)
    args = parser.parse_args()
    ScriptedHandler.script = json.loads(args.script.read_text(encoding="utf-8"))["turns"]
    ScriptedHandler.log_path = args.log
    server = ThreadingHTTPServer(("127.0.0.1", args.port), ScriptedHandler)
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
