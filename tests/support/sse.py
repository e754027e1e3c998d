"""Server-sent events as a test client receives them from ``POST /api/chat``."""
from __future__ import annotations

import json
from typing import Any


def parse_sse(text: str) -> list[tuple[str, Any]]:
    """``(event, data)`` of each event, in order."""
    events = []
    for block in filter(None, text.split("\n\n")):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events
