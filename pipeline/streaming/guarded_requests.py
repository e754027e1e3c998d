"""yt-dlp's network traffic through the SSRF guard of ``pipeline.fetch``, under one byte budget.

yt-dlp sends every request of its extractors and of its native downloaders through the request
handlers of its ``YoutubeDL`` (``yt_dlp.networking``). The streaming adapters use a ``YoutubeDL``
whose only handler is ``GuardedRH``: each request, and each redirect hop, is resolved, checked
against the address policy and sent to the vetted address itself (``pipeline.fetch.open_url``), so
an extractor led to a private address (a page's embed, a manifest's segment, a redirect) is refused
as a web page would be. The bodies read count against one budget for the whole probe or download.

Why the guard remembers what it refused: yt-dlp turns a handler's error into its own (retrying,
wrapping it in "Unable to download webpage"), so the caller asks the guard which rule refused and
reports that code instead of parsing yt-dlp's message.
"""
from __future__ import annotations

import io
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import httpx
from yt_dlp import YoutubeDL
from yt_dlp.networking.common import Request, RequestHandler, Response
from yt_dlp.networking.exceptions import HTTPError, RequestError, TransportError

from pipeline.fetch import FetchPolicy, open_url
from pipeline.types import PipelineError

# Extensions yt-dlp may attach to a request that change nothing here: the request goes to the
# vetted address with the policy's deadline, and TLS is always verified the default way.
_IGNORED_EXTENSIONS = ("cookiejar", "timeout", "legacy_ssl", "keep_header_casing")


@dataclass
class RequestGuard:
    """The policy every request of one probe or download obeys, and what they have read so far.

    ``max_bytes`` bounds all bodies together (a manifest's thousand segments share it). ``seen``
    keeps each response's headers by the URL asked for and the URL answering, so a direct media
    link's fingerprint can take its size and validators from the probe's own request.
    """

    policy: FetchPolicy
    max_bytes: int
    read_bytes: int = 0
    refusal: PipelineError | None = None
    seen: dict[str, Mapping[str, str]] = field(default_factory=dict)
    _open: ExitStack = field(default_factory=ExitStack)

    def refuse(self, error: PipelineError) -> PipelineError:
        """Remember the first refusal (later ones are yt-dlp retrying the same thing)."""
        if self.refusal is None:
            self.refusal = error
        return error

    def count(self, size: int) -> None:
        self.read_bytes += size
        if self.read_bytes > self.max_bytes:
            raise self.refuse(PipelineError("MEDIA_TOO_LARGE", f"the recording is larger than {self.max_bytes:,} bytes"))

    def hold(self, opened: ExitStack) -> None:
        """Keep a request's connection until ``close`` unless yt-dlp closes it first."""
        self._open.enter_context(opened)

    def close(self) -> None:
        """Close every response yt-dlp left open (a probe opens a media link and reads nothing)."""
        self._open.close()


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
                raise self._guard.refuse(PipelineError("FETCH_TIMEOUT", "the download took longer than allowed"))
            try:
                self._pending = next(self._chunks, b"")
            except httpx.HTTPError as error:
                raise TransportError(cause=error) from error
            self._guard.count(len(self._pending))
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        self._opened.close()
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
        cookie = self._get_cookiejar(request).get_cookie_header(request.url)
        if cookie:
            headers["Cookie"] = cookie
        policy = self._guard.policy
        deadline = time.monotonic() + policy.timeout_s
        opened = ExitStack()
        try:
            answer = opened.enter_context(
                open_url(request.url, policy, deadline=deadline, headers=headers, method=request.method, content=_body(request))
            )
        except PipelineError as error:
            opened.close()
            raise RequestError(self._guard.refuse(error).message) from error
        self._guard.hold(opened)
        response = answer.response
        kept = _response_headers(response.headers)
        self._guard.seen[request.url] = self._guard.seen[str(answer.url)] = kept
        body = _GuardedBody(response, self._guard, deadline, opened)
        adapted = Response(body, str(answer.url), kept, response.status_code, response.reason_phrase)
        if response.status_code >= 400:
            raise HTTPError(adapted)
        return adapted


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
