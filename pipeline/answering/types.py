"""Contracts of the answering layer: evidence, events, engines and the per-turn tool registry.

The server builds one ``ToolRegistry`` per chat turn, its tools being closures over the authorised,
pinned notebook context, and hands it to an engine. Engines never reach storage themselves: every
piece of evidence reaches them through a tool call, so the registry sees all of it. That is why the
registry, and nothing else, decides which chunk ids a citation may name: an id that no tool
returned during the turn was invented (by a model, or by text inside a source) and is dropped.
"""
from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from contextlib import closing
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pipeline.types import PipelineError

EventType = Literal["token", "tool", "citation", "done"]
AnswerStatus = Literal["answered", "no_evidence"]


@dataclass(frozen=True)
class EvidenceItem:
    """One chunk as a tool returns it; ``locator`` is the chunk's locator (page, time range, ...).

    ``title`` is the title its document declares (what a citation shows); ``names`` every name the
    document goes by (the record's title, that title, the file name: ``pipeline.chunk_context``),
    as a question may call it: a 10-K whose declared title is an SEC accession number is still
    "BOEING_2022_10K" to the person asking about Boeing.
    """

    chunk_id: str
    revision_id: str
    resource_id: str
    source_id: str
    text: str
    locator: dict[str, Any]
    score: float = 0.0
    title: str | None = None
    names: str = ""


@dataclass(frozen=True)
class AnswerEvent:
    """One streamed event; ``data`` is JSON-ready (the server forwards it as an SSE event)."""

    type: EventType
    data: dict[str, Any]


def token_event(text: str) -> AnswerEvent:
    return AnswerEvent("token", {"text": text})


def tool_started_event(name: str, arguments: dict[str, Any]) -> AnswerEvent:
    """Sent before a tool runs: the client hears at once what the turn is doing, while a search of
    a big notebook (or a cold one, whose vectors are being loaded) takes its time."""
    return AnswerEvent("tool", {"name": name, "arguments": arguments, "state": "running"})


def tool_event(name: str, arguments: dict[str, Any], result_count: int) -> AnswerEvent:
    return AnswerEvent("tool", {"name": name, "arguments": arguments, "result_count": result_count, "state": "done"})


def citation_event(chunk_id: str, quote: str) -> AnswerEvent:
    return AnswerEvent("citation", {"chunk_id": chunk_id, "quote": quote})


def done_event(text: str, status: AnswerStatus, citations: list[dict[str, str]], dropped: int = 0) -> AnswerEvent:
    """``dropped``: citations removed because their chunk did not support the claim."""
    return AnswerEvent("done", {"text": text, "status": status, "citations": citations, "dropped": dropped})


@dataclass(frozen=True)
class ToolSpec:
    """A read-only tool: ``function`` is called with the validated arguments as keywords.

    ``parameters`` is a JSON schema of ``type: object`` (the form OpenAI-style tool calling wants).
    The registry checks the subset it understands (required keys, no unknown keys, scalar types,
    ``minimum``/``maximum``, ``maxLength``) before the call, so a tool body never sees arguments a
    model made up outside its schema.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any]


@dataclass(frozen=True)
class ToolCallRecord:
    """What one tool call asked for and how many items it returned (for ``tool`` events and audits)."""

    name: str
    arguments: dict[str, Any]
    result_count: int


class ToolRegistry:
    """The tools of one turn, plus the evidence they returned (the only valid citation targets)."""

    def __init__(self, specs: list[ToolSpec] | None = None) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._seen: dict[str, EvidenceItem] = {}
        self.calls: list[ToolCallRecord] = []
        for spec in specs or []:
            self.register(spec)

    def register(self, spec: ToolSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"tool {spec.name!r} is already registered")
        if spec.parameters.get("type") != "object":
            raise ValueError("tool parameters must be a JSON schema of type 'object'")
        self._specs[spec.name] = spec

    def specs(self) -> list[ToolSpec]:
        """Registered tools in registration order (stable, so prompts are reproducible)."""
        return list(self._specs.values())

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run tool ``name`` and record every ``EvidenceItem`` in its result.

        Raises ``PipelineError`` with ``TOOL_UNKNOWN`` or ``TOOL_ARGUMENTS_INVALID``; errors of the
        tool body itself propagate unchanged.
        """
        spec = self._specs.get(name)
        if spec is None:
            raise PipelineError("TOOL_UNKNOWN", f"No tool named {name[:80]!r} in this conversation.")
        checked = _check_arguments(spec.parameters, arguments)
        result = spec.function(**checked)
        items = _evidence_in(result)
        for item in items:
            self._seen.setdefault(item.chunk_id, item)
        count = len(result) if isinstance(result, (list, tuple)) else int(result is not None)
        self.calls.append(ToolCallRecord(name, checked, count))
        return result

    def seen(self, chunk_id: str) -> EvidenceItem | None:
        """The evidence a tool returned under ``chunk_id`` during this turn, else None."""
        return self._seen.get(chunk_id)

    def reference_number(self, chunk_id: str) -> int | None:
        """1-based position of ``chunk_id`` among the evidence seen, in first-seen order."""
        for number, seen_id in enumerate(self._seen, start=1):
            if seen_id == chunk_id:
                return number
        return None

    def numbered(self, number: int) -> EvidenceItem | None:
        """The evidence item whose ``reference_number`` is ``number``, else None."""
        if not 1 <= number <= len(self._seen):
            return None
        return list(self._seen.values())[number - 1]


class AnswerEngine(Protocol):
    """Answers one question from the evidence its tools return, as a stream of events.

    The stream ends with exactly one ``done`` event, unless ``should_stop()`` turned true (the
    client went away): then the engine stops promptly and yields nothing more.
    """

    name: str

    def answer(
        self,
        question: str,
        tools: ToolRegistry,
        *,
        history: list[dict[str, Any]] | None = None,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> Iterator[AnswerEvent]: ...


def until_stopped(events: Generator[AnswerEvent, None, None], should_stop: Callable[[], bool]) -> Iterator[AnswerEvent]:
    """Pass ``events`` on until ``should_stop()`` turns true, then close them and yield nothing.

    ``should_stop`` is asked before each event is produced and again before it is passed on, so
    no work starts after a stop and no event computed before it leaks out. Closing the inner
    generator runs its cleanup (an engine's open HTTP stream is released at once).
    """
    with closing(events):
        while not should_stop():
            event = next(events, None)
            if event is None or should_stop():
                return
            yield event


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def _check_arguments(schema: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """Validate ``arguments`` against the supported subset of ``schema``; fill in defaults."""
    if not isinstance(arguments, dict):
        raise PipelineError("TOOL_ARGUMENTS_INVALID", "Tool arguments must be a JSON object.")
    properties: dict[str, Any] = schema.get("properties", {})
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        raise PipelineError("TOOL_ARGUMENTS_INVALID", f"Unknown argument(s): {', '.join(unknown)[:200]}.")
    missing = [name for name in schema.get("required", []) if name not in arguments]
    if missing:
        raise PipelineError("TOOL_ARGUMENTS_INVALID", f"Missing argument(s): {', '.join(missing)}.")
    checked = {name: prop["default"] for name, prop in properties.items() if "default" in prop}
    for name, value in arguments.items():
        _check_value(name, properties[name], value)
        checked[name] = value
    return checked


def _check_value(name: str, prop: dict[str, Any], value: Any) -> None:
    expected = prop.get("type")
    is_bool = isinstance(value, bool)
    if expected and (not isinstance(value, _JSON_TYPES[expected]) or (is_bool and expected != "boolean")):
        raise PipelineError("TOOL_ARGUMENTS_INVALID", f"Argument {name!r} must be of type {expected}.")
    numeric = isinstance(value, (int, float)) and not is_bool
    too_small = numeric and "minimum" in prop and value < prop["minimum"]
    if too_small or numeric and "maximum" in prop and value > prop["maximum"]:
        raise PipelineError(
            "TOOL_ARGUMENTS_INVALID",
            f"Argument {name!r} must be between {prop.get('minimum')} and {prop.get('maximum')}.",
        )
    if isinstance(value, str) and "maxLength" in prop and len(value) > prop["maxLength"]:
        raise PipelineError("TOOL_ARGUMENTS_INVALID", f"Argument {name!r} is longer than {prop['maxLength']}.")
    if "enum" in prop and value not in prop["enum"]:
        raise PipelineError("TOOL_ARGUMENTS_INVALID", f"Argument {name!r} must be one of {', '.join(map(str, prop['enum']))}.")


def _evidence_in(result: Any) -> list[EvidenceItem]:
    """Every ``EvidenceItem`` inside ``result``, also nested in lists and dict values.

    Nested items count so that a later tool (an analysis returning a summary with its evidence)
    makes its chunks citeable without any change to the engines.
    """
    if isinstance(result, EvidenceItem):
        return [result]
    if isinstance(result, dict):
        result = list(result.values())
    if isinstance(result, (list, tuple)):
        return [item for value in result for item in _evidence_in(value)]
    return []
