"""Small request helpers shared by the blueprints: JSON bodies and pagination."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import request

from app.errors import ApiError


def json_object() -> dict[str, Any]:
    """The request body as a JSON object, or a 400 that says what is wrong with it."""
    if not request.is_json:
        raise ApiError(415, "JSON_REQUIRED", "Send a JSON body with Content-Type: application/json.")
    body = request.get_json(silent=True)
    if body is None:
        raise ApiError(400, "MALFORMED_JSON", "The request body is not valid JSON.")
    if not isinstance(body, dict):
        raise ApiError(400, "MALFORMED_JSON", "The request body must be a JSON object.")
    return body


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
    return value.strip()


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
    value = body.get(name)
    if value is None and not required:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ApiError(400, "FIELD_INVALID", f"'{name}' must be a list of ids.", field=name)
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
    if per_page > max_per_page:
        raise ApiError(400, "PAGE_SIZE_TOO_LARGE", f"'per_page' is at most {max_per_page}.")
    return Paging(page, per_page)
