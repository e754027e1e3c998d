"""The streaming wire format of OpenAI-compatible ``/chat/completions``, read with httpx.

With ``"stream": true`` the server answers ``text/event-stream``: ``data: {json}`` lines, each a
``chat.completion.chunk`` whose ``choices[0].delta`` holds a piece of ``content`` and/or pieces of
``tool_calls``, and a final ``data: [DONE]``. A tool call arrives in pieces keyed by ``index``:
the first piece usually carries ``id`` and ``function.name``, later ones only fragments of the
JSON ``function.arguments`` string, which is complete only at the end of the stream.

Transport failures become ``PipelineError`` codes the server can show and map to HTTP statuses:
``LLM_UNAVAILABLE`` (no connection, timeout, 5xx, stream cut), ``LLM_REJECTED`` (4xx: wrong key,
unknown model, request too large) and ``LLM_BAD_RESPONSE`` (not the expected format).

``ChatEndpoint.complete`` is the one bounded read of a whole answer that background steps (an
analysis step, a knowledge note and its judge) share: chat streams to a person who can stop it, a
background step has nobody watching, so its answer is bounded three ways at once.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from typing import Any

import httpx

from pipeline.types import PipelineError


@dataclass
class ToolCall:
    """One complete tool call requested by the model; ``arguments`` is still a JSON string."""

    id: str
    name: str
    arguments: str


class ToolCallAccumulator:
    """Joins the ``tool_calls`` delta pieces of one streamed response by their ``index``."""

    def __init__(self) -> None:
        self._calls: dict[int, ToolCall] = {}

    def add(self, pieces: list[dict[str, Any]]) -> None:
        for position, piece in enumerate(pieces):
            index = piece.get("index", position)
            call = self._calls.setdefault(index, ToolCall("", "", ""))
            call.id = call.id or piece.get("id") or ""
            function = piece.get("function") or {}
            name = function.get("name") or ""
            if name and name != call.name:  # some servers repeat the whole name in every piece
                call.name += name
            call.arguments += function.get("arguments") or ""

    def calls(self) -> list[ToolCall]:
        """The calls in index order; a call the server sent without an id gets ``call_<index>``."""
        return [
            ToolCall(call.id or f"call_{index}", call.name, call.arguments)
            for index, call in sorted(self._calls.items())
        ]


# What a whole answer is read up to, per token asked for.
READ_CHARS_PER_TOKEN = 8


@dataclass(frozen=True)
class ChatEndpoint:
    """An OpenAI-compatible endpoint asked for one whole answer per request (no tools).

    ``deadline_s`` bounds the whole request: the read timeout alone would let a server that
    streams a piece every minute run forever. A stall is cut by the read timeout (at most 60 s)
    and a slow stream by the deadline, checked at every chunk; both are ``LLM_UNAVAILABLE``, which
    the task retries.
    """

    url: str
    model: str
    deadline_s: float
    temperature: float
    headers: dict[str, str]

    @classmethod
    def configured(cls, base_url: str, model: str, api_key: str, deadline_s: float, temperature: float) -> ChatEndpoint:
        """The endpoint as ``GNOSI_LLM_*`` name it: ``base_url`` ends in ``/v1``."""
        headers = {"Accept": "text/event-stream"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        return cls(base_url.rstrip("/") + "/chat/completions", model, deadline_s, temperature, headers)

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int) -> str:
        """The answer's text, asked for at most ``max_tokens`` and read up to twice what they
        could fill at four characters a token: a server that ignores ``max_tokens`` is not read
        further (the rest is abandoned, and the connection released at once)."""
        max_chars = max_tokens * READ_CHARS_PER_TOKEN
        payload = {"model": self.model, "messages": messages, "stream": True, "temperature": self.temperature,
                   "max_tokens": max_tokens}
        timeout = httpx.Timeout(min(self.deadline_s, 60.0), connect=min(self.deadline_s, 10.0))
        parts: list[str] = []
        read = 0
        deadline = time.monotonic() + self.deadline_s
        with httpx.Client(timeout=timeout) as client, closing(stream_chunks(client, self.url, payload, self.headers)) as chunks:
            for chunk in chunks:
                if time.monotonic() > deadline:
                    raise PipelineError("LLM_UNAVAILABLE", f"The model took longer than {self.deadline_s:,.0f} s.")
                for choice in chunk.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content") or ""
                    parts.append(piece)
                    read += len(piece)
                if read > max_chars:
                    break
        return "".join(parts)


def stream_chunks(
    client: httpx.Client, url: str, payload: dict[str, Any], headers: dict[str, str]
) -> Iterator[dict[str, Any]]:
    """POST ``payload`` and yield each parsed ``data:`` object until ``[DONE]`` or the end.

    Close the generator to abandon the response early: the connection is released at once.
    """
    try:
        with client.stream("POST", url, json=payload, headers=headers) as response:
            if response.status_code >= 400:
                detail = response.read().decode("utf-8", "replace")[:200]
                code = (
                    "LLM_UNAVAILABLE" if response.status_code >= 500 or response.status_code == 429 else "LLM_REJECTED"
                )
                raise PipelineError(code, f"The model endpoint answered HTTP {response.status_code}: {detail}")
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue  # blank separators, ": keep-alive" comments, "event:" lines
                data = line[len("data:") :].strip()
                if data == "[DONE]":
                    return
                yield _parse(data)
    except httpx.TimeoutException as error:
        raise PipelineError("LLM_UNAVAILABLE", f"The model endpoint timed out ({type(error).__name__}).") from error
    except httpx.TransportError as error:
        raise PipelineError("LLM_UNAVAILABLE", f"The model endpoint is unreachable: {error}") from error


def _parse(data: str) -> dict[str, Any]:
    try:
        chunk = json.loads(data)
    except ValueError as error:
        raise PipelineError("LLM_BAD_RESPONSE", f"The model endpoint sent invalid JSON: {data[:100]}") from error
    if not isinstance(chunk, dict):
        raise PipelineError("LLM_BAD_RESPONSE", "The model endpoint sent a chunk that is not an object.")
    if "error" in chunk:
        raise PipelineError("LLM_UNAVAILABLE", f"The model endpoint reported an error: {str(chunk['error'])[:200]}")
    return chunk
