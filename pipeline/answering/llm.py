"""Answer engine for any OpenAI-compatible chat endpoint, running the read-only tool loop.

The loop: the model answers or asks for tools; tools run through the turn's registry (so every
chunk they return becomes citeable); results go back as ``tool`` messages; repeat, at most
``max_tool_rounds`` times, after which the model must answer (``tool_choice: "none"``).

The mandatory search happens *before* the first model call: the question itself is searched and
the result is placed in the conversation as the model's own first ``search_notebook`` call. The
alternative, letting the model answer and searching afterwards when it did not, does not work
with streaming: its unsearched answer would already be on the user's screen. Done up front, the
rule holds by construction, costs no extra round trip, and the model may still search again.

Tokens are streamed as they arrive, except that ``MarkerFilter`` holds back anything that could
still become a citation marker, so a marker naming a chunk no tool returned is never shown.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterator
from contextlib import closing
from typing import Any

import httpx

from pipeline.answering.citations import MarkerFilter, citations_in
from pipeline.answering.openai_stream import ChatEndpoint, ToolCall, ToolCallAccumulator, stream_chunks
from pipeline.answering.prompts import initial_messages, render_error, render_result, tool_definitions
from pipeline.answering.tools import DEFAULT_SEARCH_RESULTS, MAX_QUERY_CHARS, SEARCH_NOTEBOOK
from pipeline.answering.types import (
    AnswerEvent,
    ToolRegistry,
    citation_event,
    done_event,
    token_event,
    tool_event,
    tool_started_event,
    until_stopped,
)
from pipeline.types import PipelineError

MAX_CALLS_PER_ROUND = 8
_PREFETCH_CALL_ID = "call_notebook_search_0"


class OpenAICompatibleEngine:
    """Streams answers from ``base_url`` (e.g. ``http://host:8080/v1``) with the notebook tools.

    The status is ``answered`` when the final text cites at least one validated chunk, else
    ``no_evidence`` (the model's own text is kept: it usually says why it cannot answer).
    ``should_stop`` is polled between events and between streamed chunks, so a stalled endpoint
    delays the stop by at most ``timeout`` seconds.
    """

    name = "openai-compatible"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = 60.0,
        max_tool_rounds: int = 4,
        *,
        temperature: float = 0.0,
    ) -> None:
        if max_tool_rounds < 0:
            raise ValueError("max_tool_rounds must be >= 0")
        self.endpoint = ChatEndpoint.configured(base_url, model, api_key, timeout, temperature)
        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self.max_tool_rounds = max_tool_rounds

    def answer(
        self,
        question: str,
        tools: ToolRegistry,
        *,
        history: list[dict[str, Any]] | None = None,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> Iterator[AnswerEvent]:
        return until_stopped(self._events(question, tools, history, should_stop), should_stop)

    def _events(
        self,
        question: str,
        tools: ToolRegistry,
        history: list[dict[str, Any]] | None,
        should_stop: Callable[[], bool],
    ) -> Generator[AnswerEvent, None, None]:
        messages = initial_messages(question, history)
        search = ToolCall(
            _PREFETCH_CALL_ID,
            SEARCH_NOTEBOOK,
            json.dumps({"query": question[:MAX_QUERY_CHARS], "limit": DEFAULT_SEARCH_RESULTS}),
        )
        messages.append(_assistant_message("", [search]))
        yield from self._run_tool(search, tools, messages)
        marker_filter = MarkerFilter(tools)
        shown: list[str] = []
        with httpx.Client(timeout=self.timeout) as client:
            for round_number in range(self.max_tool_rounds + 1):
                payload = self._payload(messages, tools, final=round_number == self.max_tool_rounds)
                accumulator = ToolCallAccumulator()
                round_text: list[str] = []
                with closing(stream_chunks(client, self.endpoint.url, payload, self.endpoint.headers)) as chunks:
                    for chunk in chunks:
                        if should_stop():
                            return  # also when nothing is shown yet (a marker being held back)
                        for choice in chunk.get("choices") or []:
                            delta = choice.get("delta") or {}
                            if content := delta.get("content"):
                                round_text.append(content)
                                if visible := marker_filter.feed(content):
                                    shown.append(visible)
                                    yield token_event(visible)
                            accumulator.add(delta.get("tool_calls") or [])
                calls = accumulator.calls()
                if not calls or round_number == self.max_tool_rounds:
                    break
                messages.append(_assistant_message("".join(round_text), calls))
                for position, call in enumerate(calls):
                    if position < MAX_CALLS_PER_ROUND:
                        yield from self._run_tool(call, tools, messages)
                    else:
                        error = render_error(
                            "TOO_MANY_TOOL_CALLS", f"At most {MAX_CALLS_PER_ROUND} tool calls per model response."
                        )
                        messages.append(_tool_message(call, error))
        if tail := marker_filter.flush():
            shown.append(tail)
            yield token_event(tail)
        cited = citations_in("".join(shown), tools)
        for citation in cited.citations:
            yield citation_event(citation["chunk_id"], citation["quote"])
        yield done_event(cited.text, "answered" if cited.citations else "no_evidence", cited.citations, cited.dropped)

    def _payload(self, messages: list[dict[str, Any]], tools: ToolRegistry, *, final: bool) -> dict[str, Any]:
        return {
            "model": self.endpoint.model,
            "messages": messages,
            "stream": True,
            "temperature": self.endpoint.temperature,
            "tools": tool_definitions(tools),
            "tool_choice": "none" if final else "auto",
        }

    @staticmethod
    def _run_tool(call: ToolCall, tools: ToolRegistry, messages: list[dict[str, Any]]) -> Iterator[AnswerEvent]:
        """Run ``call`` between its two ``tool`` events (running, done) and append its ``tool`` message.

        Bad calls (unknown tool, invalid JSON or arguments, an expected tool failure) are answered
        to the model as an error object, so it can correct itself; they count 0 results.
        """
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError:
            arguments = None
        shown = arguments if isinstance(arguments, dict) else {}
        yield tool_started_event(call.name, shown)
        try:
            if not isinstance(arguments, dict):
                raise PipelineError("TOOL_ARGUMENTS_INVALID", "Tool arguments must be a JSON object.")
            result = tools.call(call.name, arguments)
        except PipelineError as error:
            messages.append(_tool_message(call, render_error(error.code, error.message)))
            yield tool_event(call.name, shown, 0)
            return
        messages.append(_tool_message(call, render_result(result, tools)))
        record = tools.calls[-1]
        yield tool_event(record.name, record.arguments, record.result_count)


def _assistant_message(content: str, calls: list[ToolCall]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in calls
        ],
    }


def _tool_message(call: ToolCall, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call.id, "content": content}
