"""A local Google Drive: the Drive v3 endpoints the connector uses and Google's OAuth token
endpoint, on 127.0.0.1, with Google's documented response and error shapes.

API routes (``Authorization: Bearer`` with a live access token, else 401 in Google's shape):

* ``GET /drive/v3/files``: files.list. ``q`` understands ``'<id>' in parents``, ``trashed = …``
  and ``mimeType (=|!=) '…'`` joined by ``and``; ``fields`` is a partial-response mask (an unknown
  field is a 400, as at Google); ``pageSize`` 1..1000 (default 100), ``pageToken``, ``orderBy=name``.
* ``GET /drive/v3/files/<id>``: files.get; with ``alt=media`` the file's bytes (a 403
  ``fileNotDownloadable`` for Google's own formats).
* ``GET /drive/v3/files/<id>/export?mimeType=application/pdf``: files.export of Google's formats.

``POST /token`` (form) grants ``refresh_token`` (the fake's OAuth client, a refresh token it
issued and has not revoked) and ``urn:ietf:params:oauth:grant-type:jwt-bearer`` (an RS256
assertion signed with the key of a service account registered with ``register_service_account``).

A test drives the state (folders, files, trash, removal, moves, token expiry, revocation, API
failures) and reads ``requests``, a log of every request, to check what was fetched.
"""
from __future__ import annotations

import base64
import json
import secrets
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

FOLDER_TYPE = "application/vnd.google-apps.folder"
GOOGLE_TYPE_PREFIX = "application/vnd.google-apps."
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# files.export gives these as PDF (Google's formats for Docs, Sheets, Slides and Drawings).
EXPORTABLE = frozenset(GOOGLE_TYPE_PREFIX + kind for kind in ("document", "spreadsheet", "presentation", "drawing"))
FILE_FIELDS = ("kind", "id", "name", "mimeType", "modifiedTime", "size", "parents", "trashed")
DEFAULT_FILE_FIELDS = ("kind", "id", "name", "mimeType")  # what Drive v3 gives without a mask
LIST_FIELDS = ("kind", "nextPageToken", "incompleteSearch", "files")


@dataclass
class FakeItem:
    """A file or folder of the fake drive (a folder has ``FOLDER_TYPE`` and no content)."""

    id: str
    name: str
    mime_type: str
    parents: list[str]
    modified_time: datetime
    content: bytes = b""
    trashed: bool = False

    def resource(self, effective_trash: bool) -> dict[str, Any]:
        """The Drive v3 file resource, every field this fake knows."""
        resource: dict[str, Any] = {
            "kind": "drive#file",
            "id": self.id,
            "name": self.name,
            "mimeType": self.mime_type,
            "modifiedTime": self.modified_time.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "parents": list(self.parents),
            "trashed": effective_trash,
        }
        if not self.mime_type.startswith(GOOGLE_TYPE_PREFIX):  # Google's formats have no size
            resource["size"] = str(len(self.content))
        return resource


class ApiError(Exception):
    """An answer in Google's error shape."""

    def __init__(self, status: int, reason: str, message: str, location: str | None = None) -> None:
        super().__init__(message)
        self.status, self.reason, self.message, self.location = status, reason, message, location

    def body(self) -> dict[str, Any]:
        detail: dict[str, Any] = {"message": self.message, "domain": "global", "reason": self.reason}
        if self.location:
            detail.update(location=self.location, locationType="parameter")
        return {"error": {"code": self.status, "message": self.message, "errors": [detail]}}


def service_account_info(
    client_email: str = "sync@gnosi-test.iam.gserviceaccount.com",
    token_uri: str = "https://oauth2.googleapis.com/token",
) -> dict[str, Any]:
    """A service account's JSON key as the Google Cloud console gives it, with a new RSA key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    project = client_email.split("@")[1].split(".")[0]
    return {
        "type": "service_account",
        "project_id": project,
        "private_key_id": secrets.token_hex(20),
        "private_key": pem.decode("ascii"),
        "client_email": client_email,
        "client_id": str(secrets.randbelow(10**21)),
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
        "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/" + urllib.parse.quote(client_email),
        "universe_domain": "googleapis.com",
    }


@dataclass
class FakeDrive:
    """The fake's state and its server. ``token_lifetime_s`` is the ``expires_in`` of each access
    token it grants (0: a token that is dead on arrival)."""

    token_lifetime_s: int = 3600
    client_id: str = "gnosi-test.apps.googleusercontent.com"
    client_secret: str = field(default_factory=lambda: "GOCSPX-" + secrets.token_urlsafe(20))
    items: dict[str, FakeItem] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    _refresh_tokens: set[str] = field(default_factory=set)
    _access_tokens: dict[str, float] = field(default_factory=dict)
    _service_accounts: dict[str, rsa.RSAPublicKey] = field(default_factory=dict)
    _failures: list[int] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    # The server.

    def start(self) -> FakeDrive:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.drive = self  # type: ignore[attr-defined]
        serve = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-drive", daemon=True)
        serve.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeDrive:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server, "start the fake first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def token_url(self) -> str:
        return self.url + "/token"

    # The drive's content.

    def add_folder(self, name: str, parent: str = "root") -> str:
        return self._add(name, FOLDER_TYPE, parent, b"")

    def add_file(
        self,
        folder_id: str,
        name: str,
        content: bytes = b"",
        mime_type: str = "application/octet-stream",
        modified_time: datetime | None = None,
    ) -> str:
        """A file in the folder; for Google's own formats ``content`` is what files.export gives."""
        return self._add(name, mime_type, folder_id, content, modified_time)

    def trash(self, item_id: str) -> None:
        with self._lock:
            self.items[item_id].trashed = True

    def remove(self, item_id: str) -> None:
        """Delete for good, or move where the account cannot see it (Drive answers 404 alike),
        with everything inside."""
        with self._lock:
            doomed = {item_id}
            while more := {i.id for i in self.items.values() if i.id not in doomed and doomed & set(i.parents)}:
                doomed |= more
            for gone in doomed:
                self.items.pop(gone, None)

    def move(self, item_id: str, new_parent: str) -> None:
        with self._lock:
            self.items[item_id].parents = [new_parent]

    def _add(self, name: str, mime: str, parent: str, content: bytes, modified: datetime | None = None) -> str:
        item_id = secrets.token_urlsafe(24)
        when = modified or datetime.now(UTC)
        with self._lock:
            self.items[item_id] = FakeItem(item_id, name, mime, [parent], when, content)
        return item_id

    # Authorisation.

    def issue_refresh_token(self) -> str:
        """A refresh token of the fake's OAuth client, as after the owner's consent."""
        token = "1//" + secrets.token_urlsafe(32)
        with self._lock:
            self._refresh_tokens.add(token)
        return token

    def revoke(self, refresh_token: str) -> None:
        with self._lock:
            self._refresh_tokens.discard(refresh_token)

    def register_service_account(self, info: dict[str, Any]) -> None:
        """Trust the public half of ``info``'s key for assertions issued by its client_email."""
        key = serialization.load_pem_private_key(info["private_key"].encode("ascii"), password=None)
        assert isinstance(key, rsa.RSAPrivateKey)
        with self._lock:
            self._service_accounts[info["client_email"]] = key.public_key()

    def expire_access_tokens(self) -> None:
        with self._lock:
            self._access_tokens.clear()

    def fail_api(self, *statuses: int) -> None:
        """Answer the next API requests with these statuses (Google's error shape), in order."""
        with self._lock:
            self._failures.extend(statuses)

    # What happened.

    def media_requests(self) -> int:
        """How many requests asked for a file's bytes (alt=media or export)."""
        return sum(1 for r in self.requests if r["path"].endswith("/export") or r["params"].get("alt") == "media")

    def token_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == "/token"]

    # Internals of the handler, which holds the lock.

    def _in_trash(self, item: FakeItem) -> bool:
        """Trashed itself or inside a trashed folder, as Drive reports the items of a folder
        put in the trash."""
        while True:
            if item.trashed:
                return True
            parent = self.items.get(item.parents[0]) if item.parents else None
            if parent is None:
                return False
            item = parent

    def _authorised(self, header: str | None) -> bool:
        token = (header or "").removeprefix("Bearer ")
        return bool(header and header.startswith("Bearer ")) and self._access_tokens.get(token, 0) > time.time()

    def _grant(self) -> dict[str, Any]:
        token = "ya29." + secrets.token_urlsafe(40)
        self._access_tokens[token] = time.time() + self.token_lifetime_s
        return {"access_token": token, "expires_in": self.token_lifetime_s, "token_type": "Bearer"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: nothing to linger at shutdown
    server: ThreadingHTTPServer

    @property
    def drive(self) -> FakeDrive:
        return self.server.drive  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
        """Quiet: the test reads ``FakeDrive.requests``."""

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        url = urllib.parse.urlsplit(self.path)
        params = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        drive = self.drive
        with drive._lock:
            drive.requests.append({"method": "GET", "path": url.path, "params": params})
            try:
                self._answer_api(url.path, params)
            except ApiError as error:
                challenge = {"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/"'}
                self._send_json(error.status, error.body(), challenge if error.status == 401 else {})

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        url = urllib.parse.urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode("utf-8")
        form = {k: v[-1] for k, v in urllib.parse.parse_qs(body).items()}
        drive = self.drive
        with drive._lock:
            logged = {"grant_type": form.get("grant_type")}  # not the secrets of the form
            drive.requests.append({"method": "POST", "path": url.path, "params": logged})
            if url.path != "/token":
                self._send_json(404, ApiError(404, "notFound", "Not Found").body())
                return
            status, answer = _token_answer(drive, form, self.headers.get("Authorization"))
            self._send_json(status, answer)

    def _answer_api(self, path: str, params: dict[str, str]) -> None:
        drive = self.drive
        if not drive._authorised(self.headers.get("Authorization")):
            raise ApiError(401, "authError", "Request had invalid authentication credentials.", "Authorization")
        if drive._failures:
            status = drive._failures.pop(0)
            raise ApiError(status, "backendError" if status >= 500 else "rateLimitExceeded", "Backend Error")
        parts = path.removeprefix("/drive/v3/files").strip("/").split("/")
        if path == "/drive/v3/files":
            self._send_json(200, _list(drive, params))
        elif not path.startswith("/drive/v3/files/") or parts[1:] not in ([], ["export"]):
            raise ApiError(404, "notFound", "Not Found")
        elif len(parts) == 2:
            self._send_bytes(*_export(drive, parts[0], params))
        elif params.get("alt") == "media":
            self._send_bytes(*_media(drive, parts[0]))
        else:
            item = _item(drive, parts[0])
            resource = item.resource(drive._in_trash(item))
            self._send_json(200, _masked(resource, params.get("fields"), DEFAULT_FILE_FIELDS))

    def _send_json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_bytes(json.dumps(body).encode("utf-8"), "application/json; charset=UTF-8", status, headers)

    def _send_bytes(
        self, data: bytes, content_type: str, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def _item(drive: FakeDrive, item_id: str) -> FakeItem:
    item = drive.items.get(item_id)
    if item is None:
        raise ApiError(404, "notFound", f"File not found: {item_id}.", "fileId")
    return item


def _media(drive: FakeDrive, item_id: str) -> tuple[bytes, str]:
    item = _item(drive, item_id)
    if item.mime_type.startswith(GOOGLE_TYPE_PREFIX):
        raise ApiError(
            403,
            "fileNotDownloadable",
            "Only files with binary content can be downloaded. Use Export with Docs Editors files.",
            "alt",
        )
    return item.content, item.mime_type


def _export(drive: FakeDrive, item_id: str, params: dict[str, str]) -> tuple[bytes, str]:
    item = _item(drive, item_id)
    if "mimeType" not in params:
        raise ApiError(400, "required", "Required parameter: mimeType", "mimeType")
    if item.mime_type not in EXPORTABLE:
        raise ApiError(403, "fileNotExportable", "Export only supports Docs Editors files.")
    if params["mimeType"] != "application/pdf":
        raise ApiError(400, "badRequest", "The requested conversion is not supported.", "convertTo")
    return item.content, "application/pdf"


def _list(drive: FakeDrive, params: dict[str, str]) -> dict[str, Any]:
    query = params.get("q", "")
    matching = [i for i in drive.items.values() if _matches(drive, i, query)]
    if params.get("orderBy") not in (None, "name"):
        raise ApiError(400, "invalid", "Invalid Value", "orderBy")
    matching.sort(key=lambda i: (i.name, i.id) if params.get("orderBy") else i.id)
    size = _page_size(params.get("pageSize"))
    start = _page_start(params.get("pageToken"), query)
    page = matching[start : start + size]
    answer: dict[str, Any] = {
        "kind": "drive#fileList",
        "incompleteSearch": False,
        "files": [i.resource(drive._in_trash(i)) for i in page],
    }
    if start + size < len(matching):
        answer["nextPageToken"] = base64.urlsafe_b64encode(f"{start + size}\n{query}".encode()).decode()
    return _masked_list(answer, params.get("fields"))


def _page_size(text: str | None) -> int:
    try:
        size = int(text) if text is not None else 100
    except ValueError:
        size = 0
    if not 1 <= size <= 1000:
        message = f"Invalid value '{text}'. Values must be within the range: [1, 1000]"
        raise ApiError(400, "invalid", message, "pageSize")
    return size


def _page_start(token: str | None, query: str) -> int:
    """Where a page token says the next page starts; a token of another query is refused."""
    if token is None:
        return 0
    try:
        offset, token_query = base64.urlsafe_b64decode(token.encode()).decode().split("\n", 1)
        if token_query == query:
            return int(offset)
    except ValueError:
        pass
    raise ApiError(400, "invalid", "Invalid Value", "pageToken")


def _matches(drive: FakeDrive, item: FakeItem, query: str) -> bool:
    """Whether ``item`` answers ``query``, clauses joined by ``and`` (what the connector sends)."""
    for clause in query.split(" and ") if query else []:
        words = clause.strip()
        if words.endswith(" in parents") and words.startswith("'"):
            ok = words.removesuffix(" in parents").strip("'") in item.parents
        elif words in ("trashed = false", "trashed = true"):
            ok = drive._in_trash(item) == (words == "trashed = true")
        elif words.startswith("mimeType != '") or words.startswith("mimeType = '"):
            wanted = words.split("'")[1]
            ok = (item.mime_type == wanted) == words.startswith("mimeType = ")
        else:
            raise ApiError(400, "invalid", "Invalid Value", "q")
        if not ok:
            return False
    return True


def _fields(mask: str) -> dict[str, str | None]:
    """A partial-response mask, top level: ``a, b(c, d)`` -> ``{"a": None, "b": "c, d"}``."""
    selected: dict[str, str | None] = {}
    depth, start = 0, 0
    for i, char in enumerate(mask + ","):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            part = mask[start:i].strip()
            name, _, inner = part.partition("(")
            selected[name.strip()] = inner.removesuffix(")") if inner else None
            start = i + 1
    return selected


def _masked(resource: dict[str, Any], mask: str | None, default: tuple[str, ...]) -> dict[str, Any]:
    if mask is None:
        return {k: v for k, v in resource.items() if k in default}
    wanted = _fields(mask)
    if "*" in wanted:
        return resource
    unknown = [name for name in wanted if name not in FILE_FIELDS]
    if unknown:
        raise ApiError(400, "invalidParameter", f"Invalid field selection {unknown[0]}", "fields")
    return {k: v for k, v in resource.items() if k in wanted}


def _masked_list(answer: dict[str, Any], mask: str | None) -> dict[str, Any]:
    if mask is None:
        return {**answer, "files": [_masked(f, None, DEFAULT_FILE_FIELDS) for f in answer["files"]]}
    wanted = _fields(mask)
    unknown = [name for name in wanted if name not in LIST_FIELDS]
    if unknown:
        raise ApiError(400, "invalidParameter", f"Invalid field selection {unknown[0]}", "fields")
    masked = {k: v for k, v in answer.items() if k in wanted}
    if "files" in masked:
        masked["files"] = [_masked(f, wanted["files"] or "*", DEFAULT_FILE_FIELDS) for f in masked["files"]]
    return masked


def _token_answer(drive: FakeDrive, form: dict[str, str], authorization: str | None) -> tuple[int, dict[str, Any]]:
    grant = form.get("grant_type")
    if grant == "refresh_token":
        return _refresh_grant(drive, form, authorization)
    if grant == JWT_BEARER:
        return _jwt_grant(drive, form.get("assertion", ""))
    return 400, {"error": "unsupported_grant_type", "error_description": f"Invalid grant_type: {grant}"}


def _refresh_grant(drive: FakeDrive, form: dict[str, str], authorization: str | None) -> tuple[int, dict[str, Any]]:
    client = (form.get("client_id"), form.get("client_secret"))
    if authorization and authorization.startswith("Basic "):  # client_secret_basic
        user, _, password = base64.b64decode(authorization[6:]).decode().partition(":")
        client = (urllib.parse.unquote(user), urllib.parse.unquote(password))
    if client != (drive.client_id, drive.client_secret):
        return 401, {"error": "invalid_client", "error_description": "Unauthorized"}
    if form.get("refresh_token") not in drive._refresh_tokens:
        return 400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."}
    return 200, {**drive._grant(), "scope": "https://www.googleapis.com/auth/drive.readonly"}


def _jwt_grant(drive: FakeDrive, assertion: str) -> tuple[int, dict[str, Any]]:
    """Google's checks of a service account's assertion: RS256 signed by a key of the account
    named in ``iss``, the token endpoint as audience, at most an hour long and current, a scope."""
    try:
        header_b64, payload_b64, signature_b64 = assertion.split(".")
        header, claims = json.loads(_b64(header_b64)), json.loads(_b64(payload_b64))
        signature = _b64(signature_b64)
    except ValueError:
        return 400, {"error": "invalid_grant", "error_description": "Invalid JWT: not a JWT."}
    key = drive._service_accounts.get(claims.get("iss"))
    if key is None:
        return 400, {"error": "invalid_grant", "error_description": "Invalid grant: account not found"}
    try:
        if header.get("alg") != "RS256":
            raise InvalidSignature
        key.verify(signature, f"{header_b64}.{payload_b64}".encode(), padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
    drive.requests[-1]["params"]["claims"] = claims
    if claims.get("aud") != drive.token_url:
        return 400, {"error": "invalid_grant", "error_description": "Invalid JWT: Failed audience check."}
    now = time.time()
    if not (claims.get("iat", 0) - 300 <= now < claims.get("exp", 0) <= claims.get("iat", 0) + 3600):
        return 400, {
            "error": "invalid_grant",
            "error_description": (
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
            ),
        }
    if not claims.get("scope"):
        return 400, {
            "error": "invalid_scope",
            "error_description": "Invalid OAuth scope or ID token audience provided.",
        }
    return 200, drive._grant()


def _b64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
