"""SSRF-safe download of one http(s) URL: pinned connections, checked redirects, size and time caps.

Time of check vs time of use. Resolving a host, checking its addresses and then letting the
HTTP client connect *by name* leaves a window: the client resolves the name again, and a
hostile DNS server with a zero TTL can answer a public address to the check and
169.254.169.254 to the connect (DNS rebinding). Re-validating closer to the request only
narrows that window. Here it is closed by construction: the host is resolved once, every
resolved address is checked (``pipeline.netguard``), and the request is sent to the validated
IP literal itself, so httpx never performs a lookup of its own.

Why an IP-literal URL rather than a custom httpcore network backend: httpx 0.28 has no public
way to give its transport a network backend, while rewriting the URL to the vetted address,
sending the original ``Host`` header and passing the ``sni_hostname`` request extension uses
public API only. httpcore hands ``sni_hostname`` to ``ssl`` as ``server_hostname``, which
drives both SNI and certificate hostname verification, so TLS still checks the real name.
Because httpx pools connections by URL origin, which is now the IP, every hop gets a fresh
client: a TLS connection verified for one name is never reused for another name on that IP.
"""
from __future__ import annotations

import hashlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from pipeline.netguard import (
    ALLOWED_SCHEMES,
    Allowlist,
    IPAddress,
    check_addresses,
    is_public_http_url,
    literal_address,
    normalise_host,
    split_allowlist,
)
from pipeline.types import PipelineError

__all__ = ["FetchPolicy", "FetchResult", "Opened", "fetch", "is_public_http_url", "open_url"]

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_CREDENTIALS = frozenset({"cookie", "authorization", "proxy-authorization"})


@dataclass(frozen=True)
class FetchPolicy:
    """Limits for one fetch; ``allowlist`` holds hosts or CIDRs that may be non-public.

    ``timeout_s`` is a deadline for the whole fetch (DNS, every redirect hop, the body), not
    a per-operation timeout, so a server that trickles one byte at a time cannot hold a worker.
    """

    max_bytes: int = 50 * 1024 * 1024
    timeout_s: float = 30.0
    connect_timeout_s: float = 10.0
    max_redirects: int = 5
    allowlist: tuple[str, ...] = ()
    user_agent: str = "gnosi-fetch/1.0 (grounded notebooks)"
    guard: Allowlist = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Parse the allowlist now, so a malformed entry fails when the policy is built."""
        object.__setattr__(self, "allowlist", tuple(self.allowlist))
        object.__setattr__(self, "guard", Allowlist.parse(self.allowlist))

    @classmethod
    def from_allowlist_string(cls, setting: str | None, **options: Any) -> "FetchPolicy":
        """Build a policy from the comma-separated ``GNOSI_URL_ALLOWLIST`` setting."""
        return cls(allowlist=split_allowlist(setting), **options)


@dataclass(frozen=True)
class FetchResult:
    """What one fetch returned. ``redirects`` lists each Location followed, in order."""

    url: str
    status: int
    content: bytes
    content_type: str | None
    charset: str | None
    etag: str | None
    last_modified: str | None
    not_modified: bool
    content_hash: str | None
    redirects: list[str]


def fetch(
    url: str,
    policy: FetchPolicy,
    *,
    etag: str | None = None,
    last_modified: str | None = None,
) -> FetchResult:
    """GET ``url`` under ``policy``; a conditional GET when validators are given.

    Redirects are followed by hand so every hop is re-validated exactly like the first
    (scheme, credentials, resolution, address policy). Raises ``PipelineError`` with one of
    URL_INVALID, URL_SCHEME_NOT_ALLOWED, URL_BLOCKED, FETCH_UNREACHABLE, FETCH_TIMEOUT,
    FETCH_TOO_LARGE, FETCH_TOO_MANY_REDIRECTS, FETCH_HTTP_ERROR; never an httpx exception.
    """
    deadline = time.monotonic() + policy.timeout_s
    conditional = {
        name: value
        for name, value in (("If-None-Match", etag), ("If-Modified-Since", last_modified))
        if value
    }
    with open_url(url, policy, deadline=deadline, headers=conditional) as opened:
        return _result(opened.url, opened.response, policy, deadline, opened.redirects, etag, last_modified)


@dataclass(frozen=True)
class Opened:
    """The final response of a request whose redirects were followed, and each Location followed."""

    url: httpx.URL
    response: httpx.Response
    redirects: list[str]


@contextmanager
def open_url(
    url: str,
    policy: FetchPolicy,
    *,
    deadline: float,
    headers: dict[str, str] | None = None,
    method: str = "GET",
    content: bytes | None = None,
) -> Iterator[Opened]:
    """Send one request under ``policy`` by the deadline (``time.monotonic()``) and yield its final,
    still unread response; closed on leaving.

    Redirects are followed by hand so every hop is re-validated exactly like the first (scheme,
    credentials, resolution, address policy); a 303, and a 301/302 answering a POST, continue as a
    GET without a body, as browsers do, and Cookie and Authorization headers do not follow a
    redirect to another origin. Raises the ``PipelineError`` codes ``fetch`` names.
    """
    current = _checked_url(url)
    redirects: list[str] = []
    while True:
        with _pinned_response(current, policy, headers or {}, deadline, method, content) as response:
            location = response.headers.get("location")
            if response.status_code not in _REDIRECT_STATUSES or location is None:
                yield Opened(current, response, redirects)
                return
            if len(redirects) >= policy.max_redirects:
                raise PipelineError(
                    "FETCH_TOO_MANY_REDIRECTS", f"more than {policy.max_redirects} redirects"
                )
            if response.status_code == 303 or (response.status_code in (301, 302) and method == "POST"):
                method, content = "GET", None
            following = _checked_url(_join(current, location))
            if _origin(following) != _origin(current):  # credentials are for the origin they were given to
                headers = {name: value for name, value in (headers or {}).items() if name.lower() not in _CREDENTIALS}
            current = following
            redirects.append(str(current))


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme)


def _checked_url(url: str | httpx.URL) -> httpx.URL:
    """Parse a URL and refuse anything but credential-free http(s) URLs with a host."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        raise PipelineError("URL_INVALID", "not a valid URL") from None
    if not parsed.scheme:
        raise PipelineError("URL_INVALID", "URL has no scheme")
    if parsed.scheme not in ALLOWED_SCHEMES:
        raise PipelineError("URL_SCHEME_NOT_ALLOWED", f"scheme {parsed.scheme!r} is not allowed")
    if not parsed.host:
        raise PipelineError("URL_INVALID", "URL has no host")
    if parsed.userinfo:
        raise PipelineError("URL_INVALID", "URLs with credentials are not allowed")
    return parsed


def _join(base: httpx.URL, location: str) -> httpx.URL:
    """Resolve a (possibly relative) Location header against the URL that answered it."""
    try:
        return base.join(location)
    except httpx.InvalidURL:
        raise PipelineError("URL_INVALID", "redirect to an invalid URL") from None


def _time_left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise PipelineError("FETCH_TIMEOUT", "fetch deadline exceeded")
    return left


def _resolve(host: str, port: int, deadline: float) -> list[IPAddress]:
    """All addresses of ``host``, in the resolver's preferred order, within the deadline.

    getaddrinfo has no timeout of its own, so it runs in a short-lived daemon thread that
    is abandoned (it ends when the resolver gives up) if the deadline passes first. A
    per-call thread rather than a shared pool keeps this safe in forked Celery workers.
    """
    literal = literal_address(host)
    if literal is not None:
        return [literal]
    outcome: list[Any] = []

    def lookup() -> None:
        try:
            outcome.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError) as exc:
            outcome.append(exc)

    worker = threading.Thread(target=lookup, name="fetch-dns", daemon=True)
    worker.start()
    worker.join(_time_left(deadline))
    if not outcome:
        raise PipelineError("FETCH_TIMEOUT", f"resolving {host!r} took too long")
    if isinstance(outcome[0], BaseException):
        raise PipelineError("FETCH_UNREACHABLE", f"cannot resolve host {host!r}")
    addresses: list[IPAddress] = []
    for *_, sockaddr in outcome[0]:
        address = literal_address(str(sockaddr[0]))
        if address is None:
            raise PipelineError("URL_BLOCKED", f"host {host!r} has an unrecognised address")
        if address not in addresses:
            addresses.append(address)
    return addresses


@contextmanager
def _pinned_response(
    url: httpx.URL,
    policy: FetchPolicy,
    extra_headers: dict[str, str],
    deadline: float,
    method: str,
    content: bytes | None,
) -> Iterator[httpx.Response]:
    """Validate one hop, connect to a vetted address and yield the streaming response.

    httpx errors raised while the caller reads the body pass back through here, so this is
    the one place that turns them into PipelineErrors.
    """
    host = url.raw_host.decode("ascii")
    addresses = _resolve(host, url.port or _DEFAULT_PORTS[url.scheme], deadline)
    check_addresses(host, addresses, policy.guard)
    headers = {name: value for name, value in extra_headers.items() if name.lower() != "host"}
    headers["Host"] = url.netloc.decode("ascii")
    extensions: dict[str, str] = {}
    if url.scheme == "https" and literal_address(host) is None:
        extensions["sni_hostname"] = normalise_host(host)
    # An explicit transport keeps httpx from routing through proxies named in the environment
    # (a proxy would resolve the name itself); trust_env=False also ignores ~/.netrc credentials.
    with httpx.Client(
        transport=httpx.HTTPTransport(),
        trust_env=False,
        follow_redirects=False,
        headers={"User-Agent": policy.user_agent},
    ) as client, _translated_errors(deadline):
        last_error: httpx.HTTPError | None = None
        for address in addresses:
            left = _time_left(deadline)
            request = client.build_request(
                method,
                url.copy_with(host=str(address)),
                headers=headers,
                content=content,
                extensions=extensions,
                timeout=httpx.Timeout(left, connect=min(policy.connect_timeout_s, left)),
            )
            try:
                response = client.send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                last_error = exc
                continue
            try:
                yield response
            finally:
                response.close()
            return
        _time_left(deadline)
        raise PipelineError("FETCH_UNREACHABLE", f"cannot connect to {host!r}") from last_error


@contextmanager
def _translated_errors(deadline: float) -> Iterator[None]:
    try:
        yield
    except httpx.TimeoutException as exc:
        raise PipelineError("FETCH_TIMEOUT", "fetch deadline exceeded") from exc
    except httpx.HTTPError as exc:
        if time.monotonic() >= deadline:
            raise PipelineError("FETCH_TIMEOUT", "fetch deadline exceeded") from exc
        raise PipelineError("FETCH_UNREACHABLE", f"connection failed ({type(exc).__name__})") from exc


def _result(
    url: httpx.URL,
    response: httpx.Response,
    policy: FetchPolicy,
    deadline: float,
    redirects: list[str],
    etag: str | None,
    last_modified: str | None,
) -> FetchResult:
    """Turn the final response into a FetchResult, reading the body under the caps."""
    status = response.status_code
    conditional = bool(etag or last_modified)
    if not (200 <= status < 300 or (status == 304 and conditional)):
        raise PipelineError("FETCH_HTTP_ERROR", f"{url.host!r} answered HTTP {status}")
    content = b"" if status == 304 else _read_capped(response, policy.max_bytes, deadline)
    return FetchResult(
        url=str(url),
        status=status,
        content=content,
        content_type=response.headers.get("content-type", "").split(";")[0].strip().lower() or None,
        charset=(response.charset_encoding or "").lower() or None,
        etag=response.headers.get("etag", etag if status == 304 else None),
        last_modified=response.headers.get(
            "last-modified", last_modified if status == 304 else None
        ),
        not_modified=status == 304,
        content_hash=None if status == 304 else hashlib.sha256(content).hexdigest(),
        redirects=list(redirects),
    )


def _read_capped(response: httpx.Response, max_bytes: int, deadline: float) -> bytes:
    """Stream the (decoded) body, stopping as soon as it passes ``max_bytes`` or the deadline.

    The cap applies to decoded bytes, so a small gzip bomb is stopped too. A declared
    Content-Length over the cap is refused before reading anything. Each socket read may
    wait at most the time that was left when the hop started, and the deadline is checked
    after every chunk, so a trickling server is cut off at the deadline; only a read that
    stalls right across it can overrun, by at most that one read's timeout.
    """
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise PipelineError("FETCH_TOO_LARGE", f"body is larger than {max_bytes} bytes")
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > max_bytes:
            raise PipelineError("FETCH_TOO_LARGE", f"body is larger than {max_bytes} bytes")
        _time_left(deadline)
    return bytes(body)
