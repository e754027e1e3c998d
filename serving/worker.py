"""gunicorn's gevent worker, answering the requests its HTTP parser refuses in the API's shape.

gunicorn parses the request line and headers before the Flask app sees anything, and writes an
HTML page for what it refuses (an over-long URL, too many or too large headers, a malformed
request line). Clients of this API read ``{"code", "message"}`` on every error, so this subclass
writes those answers as JSON with stable codes instead.
"""
from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from gunicorn import util
from gunicorn.http import errors
from gunicorn.workers.ggevent import GeventWorker

# The first matching class wins, so subclasses come before ParseException, their base.
REFUSALS: tuple[tuple[type[Exception], int, str, str], ...] = (
    (errors.LimitRequestLine, 414, "URI_TOO_LONG", "The request line (method and URL) is too long."),
    (errors.LimitRequestHeaders, 431, "HEADERS_TOO_LARGE", "The request has too many headers, or one too large."),
    (errors.ExpectationFailed, 417, "EXPECTATION_FAILED", "Only 'Expect: 100-continue' is supported."),
    (errors.UnsupportedTransferCoding, 501, "TRANSFER_CODING_UNSUPPORTED", "Unsupported Transfer-Encoding."),
    (errors.ParseException, 400, "BAD_REQUEST", "The server could not parse this HTTP request."),
)
INTERNAL = (500, "INTERNAL_ERROR", "The server failed to handle this request.")


def refusal(exc: BaseException) -> tuple[int, str, str]:
    """Status, stable code and message for an exception gunicorn's request handling raised."""
    for kind, status, code, message in REFUSALS:
        if isinstance(exc, kind):
            return status, code, message
    return INTERNAL


def json_error_response(status: int, code: str, message: str) -> bytes:
    body = json.dumps({"code": code, "message": message}).encode()
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


class JsonErrorGeventWorker(GeventWorker):
    """One process serves every connection from greenlets, so an open websocket or a half-sent
    request costs a small greenlet instead of one of a handful of threads."""

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        status, code, message = refusal(exc)
        if status == 500:
            self.log.exception("Error handling request %s", getattr(req, "uri", "(no URI read)"))
        else:
            self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        try:
            util.write_nonblock(client, json_error_response(status, code, message))
        except OSError:
            self.log.debug("Failed to send error message.")
