"""SSRF-safe fetch against a real threaded HTTP server on 127.0.0.1.

An autouse guard wraps ``socket.socket.connect`` so that any attempt to reach an address
other than 127.0.0.1 is refused and fails the test: blocked destinations must be refused
before a connection is ever tried.
"""
from __future__ import annotations

import ipaddress
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import pytest

from pipeline.fetch import FetchPolicy, fetch, is_public_http_url
from pipeline.netguard import Allowlist, blocked_class, check_addresses
from pipeline.types import PipelineError

ETAG = '"v1"'
LAST_MODIFIED = "Wed, 01 Jan 2025 00:00:00 GMT"
SMALL_CAP = 1024
LOCAL = FetchPolicy(allowlist=("127.0.0.1",), timeout_s=5)


class Handler(BaseHTTPRequestHandler):
    """Routes for every scenario; HTTP/1.1 so chunked bodies are possible."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        """Keep test output quiet."""

    def do_GET(self) -> None:
        try:
            self._route()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up on purpose (size or time cap)

    def _route(self) -> None:
        path = self.path
        if path == "/validators":
            if self.headers.get("If-None-Match") == ETAG or (
                self.headers.get("If-Modified-Since") == LAST_MODIFIED
            ):
                self._send(304, b"", {"ETag": ETAG})
            else:
                self._send(
                    200,
                    b"<p>caf\xe9</p>",
                    {
                        "Content-Type": "text/html; charset=ISO-8859-1",
                        "ETag": ETAG,
                        "Last-Modified": LAST_MODIFIED,
                    },
                )
        elif path == "/always-304":
            self._send(304, b"", {})
        elif path == "/plain":
            self._send(200, b"hello", {"Content-Type": "text/plain"})
        elif path == "/echo-host":
            self._send(200, self.headers.get("Host", "").encode(), {})
        elif path.startswith("/chain/"):
            left = int(path.rsplit("/", 1)[1])
            target = f"{left - 1}" if left > 1 else f"http://{self.headers['Host']}/plain"
            self._redirect(target)
        elif path in REDIRECTS:
            self._redirect(REDIRECTS[path])
        elif path == "/big":
            self._send(200, b"x" * (4 * SMALL_CAP), {})
        elif path == "/big-chunked":
            self._chunked(b"x" * 512 for _ in range(16))
        elif path == "/slow":
            time.sleep(3)
            self._send(200, b"late", {})
        elif path == "/trickle":
            self._chunked(_trickle())
        else:
            self._send(404, b"nope", {})

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self._send(302, b"", {"Location": location})

    def _chunked(self, chunks: Iterator[bytes]) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


def _trickle() -> Iterator[bytes]:
    for _ in range(25):
        time.sleep(0.2)
        yield b"."


REDIRECTS = {
    "/to-metadata": "http://169.254.169.254/latest/meta-data/",
    "/to-private": "http://10.0.0.1/",
    "/to-ftp": "ftp://127.0.0.1/file",
    "/to-credentials": "http://user:secret@127.0.0.1/",
    "/loop": "/loop",
}


@contextmanager
def _serving(tls: ssl.SSLContext | None = None) -> Iterator[int]:
    """Run the test server on 127.0.0.1 (optionally behind TLS) and yield its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with _serving() as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(autouse=True)
def connections(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Record every outgoing connect; refuse (and later fail on) anything but 127.0.0.1."""
    attempts: list[str] = []
    real_connect = socket.socket.connect

    def guarded(sock: socket.socket, address: tuple) -> None:
        attempts.append(address[0])
        if address[0] != "127.0.0.1":
            raise ConnectionRefusedError("test guard: only 127.0.0.1 may be contacted")
        real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    yield attempts
    assert set(attempts) <= {"127.0.0.1"}, attempts


def _error(url: str, policy: FetchPolicy = LOCAL, **kwargs: str) -> PipelineError:
    with pytest.raises(PipelineError) as caught:
        fetch(url, policy, **kwargs)
    return caught.value


def test_loopback_is_blocked_without_allowlist(base: str, connections: list[str]) -> None:
    error = _error(f"{base}/plain", FetchPolicy())
    assert error.code == "URL_BLOCKED"
    assert "loopback" in error.message
    assert connections == []


def test_allowlisted_loopback_is_fetched(base: str) -> None:
    result = fetch(f"{base}/plain", LOCAL)
    assert (result.status, result.content, result.content_type) == (200, b"hello", "text/plain")
    assert result.url == f"{base}/plain"
    assert result.content_hash == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    assert (result.etag, result.last_modified, result.not_modified, result.redirects) == (
        None,
        None,
        False,
        [],
    )


def test_allowlist_setting_is_parsed(base: str) -> None:
    policy = FetchPolicy.from_allowlist_string(" 127.0.0.0/8, Localhost. ,", timeout_s=5)
    assert policy.allowlist == ("127.0.0.0/8", "Localhost.")
    assert policy.guard.hosts == {"localhost"}
    assert fetch(f"{base}/plain", policy).content == b"hello"
    assert FetchPolicy.from_allowlist_string(None).allowlist == ()
    with pytest.raises(ValueError):
        FetchPolicy.from_allowlist_string("10.0.0.0/33")


def test_validators_and_not_modified(base: str) -> None:
    first = fetch(f"{base}/validators", LOCAL)
    assert (first.content_type, first.charset) == ("text/html", "iso-8859-1")
    assert (first.etag, first.last_modified) == (ETAG, LAST_MODIFIED)

    by_etag = fetch(f"{base}/validators", LOCAL, etag=first.etag)
    assert (by_etag.status, by_etag.not_modified, by_etag.content) == (304, True, b"")
    assert by_etag.content_hash is None
    assert (by_etag.etag, by_etag.last_modified) == (ETAG, None)

    by_date = fetch(f"{base}/validators", LOCAL, last_modified=LAST_MODIFIED)
    assert by_date.not_modified and by_date.last_modified == LAST_MODIFIED

    changed = fetch(f"{base}/validators", LOCAL, etag='"v0"')
    assert changed.status == 200 and changed.content == b"<p>caf\xe9</p>"


def test_304_without_validators_is_an_error(base: str) -> None:
    """A 304 is only meaningful as the answer to a conditional GET."""
    error = _error(f"{base}/always-304")
    assert error.code == "FETCH_HTTP_ERROR" and "304" in error.message


def test_redirect_chain_is_followed(base: str) -> None:
    result = fetch(f"{base}/chain/3", LOCAL)
    assert result.content == b"hello"
    assert result.url == f"{base}/plain"
    assert result.redirects == [f"{base}/chain/2", f"{base}/chain/1", f"{base}/plain"]


@pytest.mark.parametrize(
    ("path", "code", "words"),
    [
        ("/to-metadata", "URL_BLOCKED", "link-local"),
        ("/to-private", "URL_BLOCKED", "private"),
        ("/to-ftp", "URL_SCHEME_NOT_ALLOWED", "ftp"),
        ("/to-credentials", "URL_INVALID", "credentials"),
        ("/loop", "FETCH_TOO_MANY_REDIRECTS", "5"),
    ],
)
def test_every_redirect_hop_is_revalidated(
    base: str, connections: list[str], path: str, code: str, words: str
) -> None:
    started = time.monotonic()
    error = _error(f"{base}{path}")
    assert (error.code, words in error.message) == (code, True)
    assert time.monotonic() - started < 2
    assert set(connections) == {"127.0.0.1"}


def test_redirect_limit_is_configurable(base: str) -> None:
    policy = FetchPolicy(allowlist=("127.0.0.1",), max_redirects=2)
    assert _error(f"{base}/chain/3", policy).code == "FETCH_TOO_MANY_REDIRECTS"
    assert fetch(f"{base}/chain/1", policy).content == b"hello"


@pytest.mark.parametrize("path", ["/big", "/big-chunked"])
def test_oversize_body_is_refused(base: str, path: str) -> None:
    policy = FetchPolicy(allowlist=("127.0.0.1",), max_bytes=SMALL_CAP, timeout_s=5)
    assert _error(f"{base}{path}", policy).code == "FETCH_TOO_LARGE"
    roomy = FetchPolicy(allowlist=("127.0.0.1",), max_bytes=16 * SMALL_CAP, timeout_s=5)
    assert len(fetch(f"{base}{path}", roomy).content) in {4 * SMALL_CAP, 8 * SMALL_CAP}


@pytest.mark.parametrize("path", ["/slow", "/trickle"])
def test_total_deadline(base: str, path: str) -> None:
    policy = FetchPolicy(allowlist=("127.0.0.1",), timeout_s=1)
    started = time.monotonic()
    assert _error(f"{base}{path}", policy).code == "FETCH_TIMEOUT"
    assert time.monotonic() - started < 2.5


def test_http_error_status(base: str) -> None:
    error = _error(f"{base}/missing")
    assert error.code == "FETCH_HTTP_ERROR" and "404" in error.message


def test_unreachable_port_fails_fast() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    assert _error(f"http://127.0.0.1:{port}/").code == "FETCH_UNREACHABLE"
    assert time.monotonic() - started < FetchPolicy().connect_timeout_s / 2, "refused at once, not timed out"


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://2130706433/", "loopback"),
        ("http://0x7f.1/", "loopback"),
        ("http://[::1]/", "loopback"),
        ("http://[::ffff:127.0.0.1]:8080/", "loopback"),
        ("https://[::ffff:169.254.169.254]/", "link-local"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://10.0.0.1:8080/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://100.64.0.1/", "shared address space"),
        ("http://224.0.0.1/", "multicast"),
        ("http://[fe80::1]/", "link-local"),
        ("http://[fec0::1]/", "site-local"),
        ("http://[fd00:ec2::254]/", "private"),
    ],
)
def test_non_public_literals_are_refused_before_connecting(
    connections: list[str], url: str, kind: str
) -> None:
    started = time.monotonic()
    error = _error(url, FetchPolicy())
    assert error.code == "URL_BLOCKED"
    assert kind in error.message
    assert time.monotonic() - started < FetchPolicy().connect_timeout_s / 2
    assert connections == []


def test_localhost_name_is_resolved_and_refused(base: str, connections: list[str]) -> None:
    port = base.rsplit(":", 1)[1]
    error = _error(f"http://localhost:{port}/plain", FetchPolicy())
    assert error.code == "URL_BLOCKED" and "localhost" in error.message
    assert connections == []


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("ftp://example.com/file", "URL_SCHEME_NOT_ALLOWED"),
        ("file:///etc/passwd", "URL_SCHEME_NOT_ALLOWED"),
        ("gopher://127.0.0.1:70/", "URL_SCHEME_NOT_ALLOWED"),
        ("http://user:pass@127.0.0.1/", "URL_INVALID"),
        ("https://token@example.com/", "URL_INVALID"),
        ("http:///no-host", "URL_INVALID"),
        ("no scheme at all", "URL_INVALID"),
        ("http://[::1/", "URL_INVALID"),
    ],
)
def test_bad_urls_are_refused(connections: list[str], url: str, code: str) -> None:
    assert _error(url, FetchPolicy()).code == code
    assert connections == []


def test_dns_answer_is_pinned_against_rebinding(
    base: str, monkeypatch: pytest.MonkeyPatch, connections: list[str]
) -> None:
    """The name is resolved once; a second, rebound answer is never consulted.

    The fake resolver answers 127.0.0.1 the first time and 169.254.169.254 afterwards, the
    classic rebinding trick. The fetch must connect to the first answer and send the
    original name in the Host header.
    """
    lookups: list[str] = []

    def answers(host: str) -> str:
        lookups.append(host)
        return "127.0.0.1" if len(lookups) == 1 else "169.254.169.254"

    _fake_dns(monkeypatch, "rebind.test", answers)
    port = base.rsplit(":", 1)[1]
    policy = FetchPolicy(allowlist=("127.0.0.0/8",), timeout_s=5)
    result = fetch(f"http://rebind.test:{port}/echo-host", policy)
    assert result.content == f"rebind.test:{port}".encode()
    assert result.url == f"http://rebind.test:{port}/echo-host"
    assert lookups == ["rebind.test"]
    assert connections == ["127.0.0.1"]


def _fake_dns(monkeypatch: pytest.MonkeyPatch, name: str, answer: Callable[[str], str]) -> None:
    """Answer getaddrinfo for one made-up name (no DNS traffic); other names resolve normally."""
    real_getaddrinfo = socket.getaddrinfo

    def resolve(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        if host != name:
            return real_getaddrinfo(host, port, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer(host), port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)


@pytest.fixture
def tls_port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, list[str]]]:
    """An HTTPS server for ``pinned.test`` (certificate from a throwaway CA) on 127.0.0.1.

    Yields its port and the SNI names it was offered; SSL_CERT_FILE names the CA, which the
    fetcher honours because its transport trusts the environment for certificates only.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.now(timezone.utc)

    def certificate(subject: str, issuer: str, key: Any, signer: Any, ca: bool) -> Any:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False
            )
        return builder.sign(signer, hashes.SHA256())

    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_cert = certificate("fetch test CA", "fetch test CA", ca_key, ca_key, ca=True)
    leaf_cert = certificate("pinned.test", "fetch test CA", leaf_key, ca_key, ca=False)
    pem = serialization.Encoding.PEM
    (tmp_path / "ca.pem").write_bytes(ca_cert.public_bytes(pem))
    (tmp_path / "leaf.pem").write_bytes(
        leaf_cert.public_bytes(pem)
        + leaf_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    offered: list[str] = []
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "leaf.pem")
    context.sni_callback = lambda _sock, name, _ctx: offered.append(name)
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    _fake_dns(monkeypatch, "pinned.test", lambda _host: "127.0.0.1")
    with _serving(context) as port:
        yield port, offered


def test_https_keeps_sni_and_certificate_check_on_the_name(
    tls_port: tuple[int, list[str]], connections: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, offered = tls_port
    policy = FetchPolicy(allowlist=("127.0.0.0/8",), timeout_s=5)
    result = fetch(f"https://pinned.test:{port}/echo-host", policy)
    assert result.content == f"pinned.test:{port}".encode()
    assert offered == ["pinned.test"]
    assert set(connections) == {"127.0.0.1"}

    monkeypatch.delenv("SSL_CERT_FILE")
    assert _error(f"https://pinned.test:{port}/echo-host", policy).code == "FETCH_UNREACHABLE"


@pytest.mark.parametrize(
    ("url", "allowlist", "expected"),
    [
        ("https://example.com/a?b=1", (), True),
        ("http://93.184.216.34/", (), True),
        ("http://[2606:4700::1111]/", (), True),
        ("http://localhost:8000/", (), False),
        ("http://LOCALHOST./", (), False),
        ("http://app.localhost/", (), False),
        ("http://printer.local/", (), False),
        ("http://metadata.google.internal/", (), False),
        ("http://127.0.0.1/", (), False),
        ("http://2130706433/", (), False),
        ("http://0x7f.1/", (), False),
        ("http://127.0.0.1./", (), False),
        ("http://[::1]/", (), False),
        ("http://10.1.2.3/", (), False),
        ("http://169.254.169.254/", (), False),
        ("ftp://example.com/", (), False),
        ("http://user:pw@example.com/", (), False),
        ("http:///nohost", (), False),
        ("not a url", (), False),
        ("", (), False),
        ("http://127.0.0.1:8000/", ("127.0.0.1",), True),
        ("http://localhost/", ("localhost",), True),
        ("http://10.2.3.4/", ("10.0.0.0/8",), True),
        ("http://10.2.3.4/", ("192.168.0.0/16",), False),
    ],
)
def test_is_public_http_url(url: str, allowlist: tuple[str, ...], expected: bool) -> None:
    assert is_public_http_url(url, allowlist) is expected


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("8.8.8.8", None),
        ("2606:4700::1111", None),
        ("::ffff:10.0.0.1", "private"),
        ("64:ff9b::a9fe:a9fe", "link-local"),
        ("64:ff9b::808:808", None),
        ("2002:7f00:1::", "loopback"),
        ("100.64.1.1", "shared address space"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("192.0.0.8", "non-public"),
    ],
)
def test_address_classes(address: str, kind: str | None) -> None:
    assert blocked_class(ipaddress.ip_address(address)) == kind


def test_any_blocked_address_refuses_the_host() -> None:
    mixed = [ipaddress.ip_address("8.8.8.8"), ipaddress.ip_address("10.0.0.1")]
    with pytest.raises(PipelineError) as caught:
        check_addresses("mixed.example", mixed, Allowlist())
    assert caught.value.code == "URL_BLOCKED" and "10.0.0.1" not in caught.value.message
    check_addresses("mixed.example", mixed, Allowlist.parse(["10.0.0.0/8"]))
    check_addresses("Mixed.Example.", mixed, Allowlist.parse(["mixed.example"]))
