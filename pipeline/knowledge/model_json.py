"""Reading the one JSON object a model was asked for, shared by the note writer and the concept
engine: a model's answer is data to check field by field, never trusted for its types."""
from __future__ import annotations

import json
from typing import Any

import regex

from pipeline.types import PipelineError

# A judge's problems become notes a person reads: a few sentences, not an essay.
_MAX_PROBLEMS = 8
_MAX_PROBLEM_CHARS = 300
# From the first fence to the last: a code block inside the answer may carry fences of its own.
_FENCE = regex.compile(r"```(?:json)?\s*(.*)```", regex.DOTALL | regex.IGNORECASE)


def json_object(answer: str) -> dict[str, Any]:
    """The JSON object the model answered, bare or in a fence; anything else is a bad response."""
    fenced = _FENCE.search(answer)
    for candidate in [answer, *([fenced.group(1)] if fenced else [])]:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise PipelineError("LLM_BAD_RESPONSE", f"The model did not answer the JSON object asked for: {answer[:100]!r}")


def number(value: Any) -> int | None:
    """A 1-based number the model wrote, or None: JSON ``true`` is not the number 1."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def listed(item: Any, name: str) -> list[Any]:
    value = item.get(name) if isinstance(item, dict) else None
    return value if isinstance(value, list) else []


def text(item: Any, name: str) -> str:
    value = item.get(name) if isinstance(item, dict) else None
    return value.strip() if isinstance(value, str) else ""


def verdict(answer: dict[str, Any], judged: str, unsaid: str) -> tuple[str, ...]:
    """A judge's ``{"ok": bool, "problems": [...]}``: ``()`` when ok, else its problems (``unsaid``
    when it gave none: "not ok" still counts, nothing is published unjudged); an answer without
    ``ok`` is a bad response."""
    if not isinstance(answer.get("ok"), bool):
        raise PipelineError("LLM_BAD_RESPONSE", f"The judge did not say whether {judged} is ok.")
    if answer["ok"]:
        return ()
    problems = [said[:_MAX_PROBLEM_CHARS] for item in listed(answer, "problems") if isinstance(item, str) and (said := item.strip())]
    return tuple(problems[:_MAX_PROBLEMS]) or (unsaid,)
