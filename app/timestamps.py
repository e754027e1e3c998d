"""How the API writes a moment: ISO 8601 in UTC, to the second, with a ``Z``."""
from __future__ import annotations

from datetime import datetime


def iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") + "Z" if value else None
