"""Small request helpers shared by the blueprints: JSON bodies, text fields and pagination."""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from flask import request

from app.errors import ApiError

MAX_JSON_DEPTH = 32
MAX_PAGE = 1_000_000
# C0/C1 controls (NUL included) and the bidirectional embeddings, overrides and isolates that
# make a title read differently from what it is ("Trojan Source").
_FORBIDDEN_IN_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def parse_json_object(raw: str | bytes) -> dict[str, Any]:
    """A JSON object from a client (HTTP body or websocket message), or a 400 saying what is wrong.

    Nesting is bounded (the parser would otherwise recurse until RecursionError) and every
    string must be valid Unicode: a lone surrogate (legal JSON, ``"\\ud800"``) cannot be stored
    in SQLite or sent on as UTF-8, so it is refused here rather than failing deep inside.
    """
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise ApiError(400, "MALFORMED_JSON", "The body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise ApiError(400, "MALFORMED_JSON", "The body must be a JSON object.")
    _check_values(body)
    return body


def _check_values(body: dict[str, Any]) -> None:
    pending: list[tuple[Any, int]] = [(body, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, str):
            _check_unicode(value)
        elif isinstance(value, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise ApiError(400, "JSON_TOO_DEEP", f"JSON may nest at most {MAX_JSON_DEPTH} levels.")
            if isinstance(value, dict):
                for key in value:
                    _check_unicode(key)
                value = list(value.values())
            pending.extend((item, depth + 1) for item in value)


def _check_unicode(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(400, "INVALID_UNICODE", "Text must be valid Unicode (no lone surrogates).") from None


def json_object() -> dict[str, Any]:
    """The request body as a JSON object, or a 400 that says what is wrong with it."""
    if not request.is_json:
        raise ApiError(415, "JSON_REQUIRED", "Send a JSON body with Content-Type: application/json.")
    return parse_json_object(request.get_data(cache=True))


def refuse_unknown_fields(body: dict[str, Any], accepted: Iterable[str]) -> None:
    """A misspelt field would otherwise be ignored without a word: every body is checked."""
    unknown = sorted(set(body) - set(accepted))
    if unknown:
        raise ApiError(400, "FIELD_UNKNOWN", f"Unknown fields: {', '.join(unknown)}.")


def string_field(body: dict[str, Any], name: str, *, required: bool, max_len: int = 300) -> str | None:
    value = body.get(name)
    if value is None:
        if required:
            raise ApiError(400, "FIELD_REQUIRED", f"'{name}' is required.", field=name)
        return None
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, "FIELD_INVALID", f"'{name}' must be a non-empty string.", field=name)
    if len(value) > max_len:
        raise ApiError(400, "FIELD_TOO_LONG", f"'{name}' is longer than {max_len} characters.", field=name)
    if _FORBIDDEN_IN_TEXT.search(value):
        raise ApiError(
            400, "FIELD_INVALID", f"'{name}' must not contain control or bidirectional-override characters.",
            field=name,
        )
    return value.strip()


def int_field(body: dict[str, Any], name: str, *, default: int, minimum: int, maximum: int) -> int:
    """A whole number between ``minimum`` and ``maximum`` (``true`` is no number here)."""
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ApiError(400, "FIELD_INVALID", f"'{name}' must be a whole number from {minimum} to {maximum}.", field=name)
    return value


def bool_field(body: dict[str, Any], name: str, *, default: bool) -> bool:
    value = body.get(name, default)
    if not isinstance(value, bool):
        raise ApiError(400, "FIELD_INVALID", f"'{name}' must be true or false.", field=name)
    return value


def choice_field(body: dict[str, Any], name: str, choices: tuple[str, ...], default: str | None) -> str | None:
    value = body.get(name, default)
    if value is None:
        return None
    if value not in choices:
        raise ApiError(
            400, "FIELD_INVALID", f"'{name}' must be one of: {', '.join(choices)}.", field=name
        )
    return value


def string_list(body: dict[str, Any], name: str, *, max_items: int, required: bool) -> list[str]:
    """A list of ids; ``required`` means present and not empty (creating a notebook and adding
    sources both need at least one resource)."""
    value = body.get(name)
    if value is None and not required:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ApiError(400, "FIELD_INVALID", f"'{name}' must be a list of ids.", field=name)
    if required and not value:
        raise ApiError(400, "FIELD_INVALID", f"'{name}' must not be empty.", field=name)
    if len(value) > max_items:
        raise ApiError(
            400, "TOO_MANY_RESOURCES", f"At most {max_items} ids per request ({len(value)} sent).",
            field=name,
        )
    return list(dict.fromkeys(value))


@dataclass(frozen=True)
class Paging:
    page: int
    per_page: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    def shown(self, items: list[Any], total: int, **extra: Any) -> dict[str, Any]:
        """One page as the API answers it: its items, where it is, and how many there are."""
        return {"items": items, "page": self.page, "per_page": self.per_page, "total": total, **extra}


def limit_arg(*, default: int, maximum: int) -> int:
    """The query's ``limit``: an integer from 1 to ``maximum``, else ``BAD_LIMIT`` (a limit that is
    no number is refused, not silently replaced by the default)."""
    raw = request.args.get("limit")
    if raw is None:
        return default
    try:
        limit = int(raw)
    except ValueError:
        raise ApiError(400, "BAD_LIMIT", "'limit' must be an integer.") from None
    if not 1 <= limit <= maximum:
        raise ApiError(400, "BAD_LIMIT", f"'limit' must be between 1 and {maximum}.")
    return limit


def paging(*, default_per_page: int = 50, max_per_page: int = 200) -> Paging:
    def _int(name: str, default: int) -> int:
        raw = request.args.get(name)
        if raw is None:
            return default
        try:
            return int(raw)
        except ValueError:
            raise ApiError(400, "BAD_PAGINATION", f"'{name}' must be an integer.") from None

    page, per_page = _int("page", 1), _int("per_page", default_per_page)
    if page < 1 or per_page < 1:
        raise ApiError(400, "BAD_PAGINATION", "'page' and 'per_page' must be at least 1.")
    if page > MAX_PAGE:
        raise ApiError(400, "BAD_PAGINATION", f"'page' is at most {MAX_PAGE}.")
    if per_page > max_per_page:
        raise ApiError(400, "PAGE_SIZE_TOO_LARGE", f"'per_page' is at most {max_per_page}.")
    return Paging(page, per_page)
