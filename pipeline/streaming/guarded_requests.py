"""yt-dlp's network traffic through the SSRF guard of ``pipeline.fetch``, under one byte budget.

yt-dlp sends every request of its extractors and of its native downloaders through the request
handlers of its ``YoutubeDL`` (``yt_dlp.networking``). The streaming adapters use a ``YoutubeDL``
whose only handler is ``GuardedRH``: each request, and each redirect hop, is resolved, checked
against the address policy and sent to the vetted address itself (``pipeline.fetch.open_url``), so
an extractor led to a private address (a page's embed, a manifest's segment, a redirect) is refused
as a web page would be. The bodies read count against one budget for the whole probe or download.

Why the guard remembers what it refused: yt-dlp turns a handler's error into its own (retrying,
wrapping it in "Unable to download webpage"), so the caller asks the guard which rule refused and
reports that code instead of parsing yt-dlp's message. A rule's refusal (an address, the budget,
the deadline, a cancel) sticks: it fails the probe or download even if yt-dlp carries on. A
connection that failed (``FETCH_UNREACHABLE``) does not: yt-dlp retries, and only when it gives up
is that failure the reason.
"""
from __future__ import annotations

import io
import time
import urllib.request
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from email.message import Message
from functools import partial
from typing import Any

import httpx
from yt_dlp import YoutubeDL
from yt_dlp.networking.common import Request, RequestHandler, Response
from yt_dlp.networking.exceptions import HTTPError, RequestError, TransportError

from pipeline.fetch import FetchPolicy, open_url
from pipeline.types import PipelineError

# Failures of one connection, which yt-dlp's retries may get past.
_TRANSIENT = frozenset({"FETCH_UNREACHABLE", "FETCH_TIMEOUT"})
# Extensions yt-dlp may attach to a request that change nothing here: the request goes to the
# vetted address with the policy's deadline, and TLS is always verified the default way.
_IGNORED_EXTENSIONS = ("cookiejar", "timeout", "legacy_ssl", "keep_header_casing")


@dataclass
class RequestGuard:
    """The policy every request of one probe or download obeys, and what they have read so far.

    ``max_bytes`` bounds all bodies together (a manifest's thousand segments share it), and
    ``within_s`` all requests together (from the guard's making); each request also has the
    policy's ``timeout_s``. ``seen`` keeps each response's headers by the URL asked for and the URL
    answering, so a direct media link's fingerprint can take its size and validators from the
    probe's own request.
    """

    policy: FetchPolicy
    max_bytes: int
    within_s: float
    read_bytes: int = 0
    refusal: PipelineError | None = None
    failure: PipelineError | None = None
    seen: dict[str, Mapping[str, str]] = field(default_factory=dict)
    deadline: float = field(init=False)
    _open: set[ExitStack] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.within_s

    def refuse(self, error: PipelineError) -> PipelineError:
        """Remember a rule's refusal (the first: later ones are yt-dlp retrying the same thing)."""
        if self.refusal is None:
            self.refusal = error
        return error

    def failed(self, error: PipelineError) -> PipelineError:
        """Remember why a request failed, the reason if yt-dlp gives up after its retries."""
        if error.code in _TRANSIENT:
            self.failure = error
            return error
        return self.refuse(error)

    def request_deadline(self) -> float:
        if time.monotonic() >= self.deadline:
            raise self.refuse(PipelineError("FETCH_TIMEOUT", f"took longer than {self.within_s:,.0f} s"))
        return min(self.deadline, time.monotonic() + self.policy.timeout_s)

    def count(self, size: int) -> None:
        self.read_bytes += size
        if self.read_bytes > self.max_bytes:
            raise self.refuse(too_large(self.max_bytes))

    def hold(self, opened: ExitStack) -> None:
        """Keep a request's connection until ``close`` unless it is released first."""
        self._open.add(opened)

    def release(self, opened: ExitStack) -> None:
        """Close a request's connection (its body is read, or yt-dlp closed it): a download of
        thousands of segments holds only the ones still open."""
        opened.close()
        self._open.discard(opened)

    @property
    def open_requests(self) -> int:
        return len(self._open)

    def close(self) -> None:
        """Close every response yt-dlp left open (a probe opens a media link and reads nothing)."""
        while self._open:
            self._open.pop().close()


def too_large(max_bytes: int) -> PipelineError:
    return PipelineError("MEDIA_TOO_LARGE", f"the recording is larger than {max_bytes:,} bytes")


class _GuardedBody(io.RawIOBase):
    """A response body read chunk by chunk under the guard's budget and the request's deadline."""

    def __init__(self, response: httpx.Response, guard: RequestGuard, deadline: float, opened: ExitStack) -> None:
        super().__init__()
        self._chunks = response.iter_bytes()
        self._pending = b""
        self._guard, self._deadline, self._opened = guard, deadline, opened

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        """yt-dlp asks for ``read(None)`` to mean all of it, which ``RawIOBase`` refuses."""
        return super().read(-1 if size is None else size)

    def readinto(self, buffer: Any) -> int:
        if not self._pending:
            if time.monotonic() > self._deadline:
                raise self._guard.failed(PipelineError("FETCH_TIMEOUT", "a response took longer than allowed"))
            try:
                self._pending = next(self._chunks, b"")
            except httpx.HTTPError as error:
                raise TransportError(cause=error) from error
            if not self._pending:  # the whole body is read: yt-dlp seldom closes a response itself
                self._guard.release(self._opened)
            self._guard.count(len(self._pending))
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        self._guard.release(self._opened)
        super().close()


class GuardedRH(RequestHandler):
    """A yt-dlp request handler that sends through ``pipeline.fetch.open_url``; never a proxy."""

    _SUPPORTED_URL_SCHEMES = ("http", "https")

    def __init__(self, *, guard: RequestGuard, **options: Any) -> None:
        super().__init__(**options)
        self._guard = guard

    def _check_extensions(self, extensions: dict[str, Any]) -> None:
        super()._check_extensions(extensions)
        for name in _IGNORED_EXTENSIONS:
            extensions.pop(name, None)

    def _check_proxies(self, proxies: dict[str, str]) -> None:
        """Proxies are never used: the request goes to the vetted address itself."""

    def _send(self, request: Request) -> Response:
        headers = dict(self._merge_headers(request.headers))
        jar = self._get_cookiejar(request)
        cookie = jar.get_cookie_header(request.url)
        if cookie:
            headers["Cookie"] = cookie
        opened = ExitStack()
        try:
            deadline = self._guard.request_deadline()
            answer = opened.enter_context(
                open_url(request.url, self._guard.policy, deadline=deadline, headers=headers, method=request.method,
                         content=_body(request))
            )
        except PipelineError as error:
            opened.close()
            failed = self._guard.failed(error)
            if failed.code in _TRANSIENT:  # yt-dlp retries these
                raise TransportError(msg=failed.message) from error
            raise RequestError(failed.message) from error
        self._guard.hold(opened)
        response = answer.response
        jar.extract_cookies(_CookieSource(response.headers), urllib.request.Request(str(answer.url)))
        kept = _response_headers(response.headers)
        self._guard.seen[request.url] = self._guard.seen[str(answer.url)] = kept
        body = _GuardedBody(response, self._guard, deadline, opened)
        adapted = Response(body, str(answer.url), kept, response.status_code, response.reason_phrase)
        if response.status_code >= 400:
            raise HTTPError(adapted)
        return adapted


class _CookieSource:
    """What ``http.cookiejar`` reads a response's Set-Cookie headers from."""

    def __init__(self, headers: httpx.Headers) -> None:
        self._message = Message()
        for value in headers.get_list("set-cookie"):
            self._message["Set-Cookie"] = value

    def info(self) -> Message:
        return self._message


def _body(request: Request) -> bytes | None:
    data = request.data
    if data is None or isinstance(data, bytes):
        return data
    if hasattr(data, "read"):
        return data.read()
    return b"".join(data)


def _response_headers(headers: httpx.Headers) -> dict[str, str]:
    """The headers yt-dlp sees. httpx hands over decoded bodies, so a compressed response loses
    its Content-Encoding and Content-Length (they describe the bytes on the wire)."""
    kept = dict(headers.items())
    if headers.get("content-encoding", "identity").lower() != "identity":
        for name in [name for name in kept if name.lower() in ("content-encoding", "content-length")]:
            del kept[name]
    return kept


class GuardedYoutubeDL(YoutubeDL):
    """A ``YoutubeDL`` whose every request goes through ``GuardedRH`` under ``guard``."""

    def __init__(self, params: dict[str, Any], guard: RequestGuard) -> None:
        self._guard = guard
        super().__init__(params)

    def build_request_director(self, handlers: Any, preferences: Any = None) -> Any:
        return super().build_request_director([partial(GuardedRH, guard=self._guard)], preferences)
