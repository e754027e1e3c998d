"""Google Drive folders through the Drive v3 REST API (``files.list``, ``files.get``, ``alt=media``,
``files.export``), authorised with authlib: a document owner's stored authorisation (a refresh
token of the instance's OAuth client) or a service account's JSON key (a signed JWT grant).

The connector refreshes the access token itself, before a request when it has expired and once
when the API answers 401, so every refresh reaches ``on_token`` and every failure is a
``PipelineError``. Tokens and secrets never reach a log or an exception message: the messages
are fixed texts, and the credential records hide their secrets from ``repr``.

Google's own formats (Docs, Sheets, Slides, Drawings) have no bytes of their own: they are listed
as PDF and downloaded through ``files.export``; other Google-only types (forms, shortcuts, sites)
cannot be downloaded at all and are not listed.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, BinaryIO

from authlib.integrations.base_client import OAuthError
from authlib.integrations.httpx_client import AssertionClient, OAuth2Client
from joserfc.errors import JoseError
from joserfc.jwk import RSAKey

try:  # authlib builds its clients on httpx2 when it is installed, else on httpx: catch the errors
    import httpx2 as httpx  # of the library they are made of
except ImportError:  # pragma: no cover (depends on what is installed)
    import httpx  # type: ignore[no-redef]

from pipeline.connectors.base import (
    BLOCK_BYTES,
    DRIVE_NOT_AUTHORIZED,
    FILE_TOO_LARGE,
    FILE_UNAVAILABLE,
    FOLDER_UNAVAILABLE,
    FilePage,
    FolderInfo,
    RemoteFile,
    copy_capped,
)
from pipeline.types import PipelineError

DRIVE_UNAVAILABLE = "DRIVE_UNAVAILABLE"  # Drive or its token endpoint failed transiently
NOT_AUTHORIZED_MESSAGE = (
    "The document owner has not authorized Google Drive, or the authorization has expired."
)
DRIVE_SCOPE = "https://www.googleapis.com/auth/drive.readonly"
FOLDER_TYPE = "application/vnd.google-apps.folder"
PDF_TYPE = "application/pdf"
# Google's own formats that files.export can give as PDF.
EXPORTED_AS_PDF = frozenset(
    "application/vnd.google-apps." + kind for kind in ("document", "spreadsheet", "presentation", "drawing")
)
LIST_FIELDS = "nextPageToken, files(id, name, mimeType, modifiedTime, size)"
# An access token this close to its expiry is refreshed before use rather than risk a 401.
TOKEN_LEEWAY_S = 60
_DRIVE_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
_TRANSIENT_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded", "backendError"})
_TRANSIENT_OAUTH_ERRORS = frozenset({"temporarily_unavailable", "server_error"})


@dataclass(frozen=True)
class UserAuthorization:
    """A document owner's stored authorisation: the instance's OAuth client, the owner's refresh
    token and, when one was kept, the last access token and its expiry (Unix seconds)."""

    client_id: str
    client_secret: str = field(repr=False)
    refresh_token: str = field(repr=False)
    access_token: str | None = field(default=None, repr=False)
    expires_at: int | None = None


@dataclass(frozen=True)
class ServiceAccount:
    """A service account's JSON key as Google gives it (``client_email``, ``private_key``...)."""

    info: dict[str, Any] = field(repr=False)


Credentials = UserAuthorization | ServiceAccount


@dataclass(frozen=True)
class _Failures:
    """Which code a failed call reports: ``gone`` when Drive refuses the item (404, 403 and other
    client errors), ``transient`` when Drive or the network failed and a later try may work."""

    gone: str
    transient: str
    what: str


_FOLDER_CALL = _Failures(FOLDER_UNAVAILABLE, FOLDER_UNAVAILABLE, "folder")
_LIST_CALL = _Failures(FOLDER_UNAVAILABLE, DRIVE_UNAVAILABLE, "folder")
_FILE_CALL = _Failures(FILE_UNAVAILABLE, DRIVE_UNAVAILABLE, "file")


class GoogleDriveConnector:
    """A Drive folder's files; a file's id is its Drive id."""

    name = "google-drive"

    def __init__(
        self,
        credentials: Credentials | None,
        *,
        api_url: str = "https://www.googleapis.com",
        token_url: str = "https://oauth2.googleapis.com/token",
        on_token: Callable[[dict[str, Any]], None] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._api_url = api_url.rstrip("/")
        self._token_url = token_url
        self._on_token = on_token
        if isinstance(credentials, UserAuthorization) and credentials.refresh_token:
            self._http: OAuth2Client | AssertionClient = _user_client(credentials, token_url, timeout)
        elif isinstance(credentials, ServiceAccount):
            self._http = _service_account_client(credentials, token_url, timeout)
        else:
            raise _not_authorized()

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GoogleDriveConnector:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def folder(self, folder_id: str) -> FolderInfo:
        path = _item_path(_drive_id(folder_id, _FOLDER_CALL))
        params = {"fields": "id, name, mimeType, trashed", "supportsAllDrives": "true"}
        meta = self._json(path, params, _FOLDER_CALL)
        if meta.get("mimeType") != FOLDER_TYPE or meta.get("trashed"):
            raise PipelineError(FOLDER_UNAVAILABLE, "Google Drive has this folder in the trash, or it is no folder.")
        return FolderInfo(id=str(meta["id"]), name=str(meta.get("name", "")))

    def list_files(self, folder_id: str, page_token: str | None = None) -> FilePage:
        if page_token is None:
            # files.list answers an empty list for a folder that is gone or in the trash, and
            # an unreadable folder must not pass for an empty one.
            self.folder(folder_id)
        folder_id = _drive_id(folder_id, _LIST_CALL)  # it goes into the query's text
        params = {
            "q": f"'{folder_id}' in parents and trashed = false and mimeType != '{FOLDER_TYPE}'",
            "fields": LIST_FIELDS,
            "pageSize": "100",
            "orderBy": "name",
            "supportsAllDrives": "true",
            "includeItemsFromAllDrives": "true",
        }
        if page_token:
            params["pageToken"] = page_token
        answer = self._json("/drive/v3/files", params, _LIST_CALL)
        try:
            items = [item for item in answer.get("files", []) if _downloadable(item.get("mimeType"))]
            files = [_remote_file(item) for item in items]
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise _unexpected(_LIST_CALL) from exc
        return FilePage(files, answer.get("nextPageToken") or None)

    def download(self, folder_id: str, file_id: str, into: BinaryIO, max_bytes: int) -> int:
        path = _item_path(_drive_id(file_id, _FILE_CALL))
        params = {"fields": "id, mimeType, size, trashed, parents", "supportsAllDrives": "true"}
        meta = self._json(path, params, _FILE_CALL)
        mime = meta.get("mimeType")
        if meta.get("trashed") or folder_id not in meta.get("parents", []) or not _downloadable(mime):
            raise PipelineError(FILE_UNAVAILABLE, "The file has left the folder, or Drive cannot give its bytes.")
        if _size(meta) > max_bytes:  # refused before a byte is fetched
            raise PipelineError(FILE_TOO_LARGE, f"The file is larger than {max_bytes} bytes.")
        if mime in EXPORTED_AS_PDF:
            path, params = path + "/export", {"mimeType": PDF_TYPE}
        else:
            params = {"alt": "media", "supportsAllDrives": "true"}
        with self._response(path, params, _FILE_CALL) as response:
            return copy_capped(response.iter_bytes(BLOCK_BYTES), into, max_bytes, "The file")

    def _json(self, path: str, params: dict[str, str], failures: _Failures) -> dict[str, Any]:
        with self._response(path, params, failures) as response:
            response.read()
        try:
            answer = response.json()
        except ValueError as exc:
            raise _unexpected(failures) from exc
        if not isinstance(answer, dict):
            raise _unexpected(failures)
        return answer

    @contextmanager
    def _response(self, path: str, params: dict[str, str], failures: _Failures) -> Iterator[httpx.Response]:
        """A successful (2xx) streamed answer of the API; a transport error while it is read is
        ``failures.transient`` too."""
        response = self._authorised_send(path, params, failures)
        try:
            _raise_for_status(response, failures)
            yield response
        except httpx.HTTPError as exc:
            raise PipelineError(failures.transient, "Google Drive could not be reached.") from exc
        finally:
            response.close()

    def _authorised_send(self, path: str, params: dict[str, str], failures: _Failures) -> httpx.Response:
        """Send with a valid access token; a 401 gets one refresh and one more try, unless the
        token was just refreshed (then the authorisation itself is refused)."""
        fresh = self._ensure_token(failures)
        response = self._send(path, params, failures)
        if response.status_code != 401:
            return response
        response.close()
        if not fresh:
            self._refresh(failures)
            response = self._send(path, params, failures)
            if response.status_code != 401:
                return response
            response.close()
        raise _not_authorized()

    def _send(self, path: str, params: dict[str, str], failures: _Failures) -> httpx.Response:
        request = self._http.build_request("GET", self._api_url + path, params=params)
        try:
            # The token's own auth, passed explicitly, keeps authlib from refreshing on its own:
            # this class refreshes, so that every new token reaches on_token.
            return self._http.send(request, auth=self._http.token_auth, stream=True, follow_redirects=True)
        except httpx.HTTPError as exc:
            raise PipelineError(failures.transient, "Google Drive could not be reached.") from exc

    def _ensure_token(self, failures: _Failures) -> bool:
        """Refresh the access token when there is none or it is about to expire; True when it
        was refreshed."""
        token = self._http.token
        if token and token.get("access_token") and not token.is_expired(leeway=TOKEN_LEEWAY_S):
            return False
        self._refresh(failures)
        return True

    def _refresh(self, failures: _Failures) -> None:
        try:
            if isinstance(self._http, OAuth2Client):
                self._http.refresh_token(self._token_url)
            else:
                # authlib adds a jti to the claims it is given, in place: fresh claims give each
                # assertion a jti of its own.
                self._http.claims = {"scope": DRIVE_SCOPE}
                self._http.refresh_token()
        except OAuthError as exc:
            if exc.error in _TRANSIENT_OAUTH_ERRORS:
                raise PipelineError(failures.transient, "Google's token service is unavailable.") from None
            raise _not_authorized() from None  # invalid_grant: revoked, expired, or a wrong key
        except httpx.HTTPStatusError as exc:
            if _is_transient_status(exc.response.status_code):
                raise PipelineError(failures.transient, "Google's token service is unavailable.") from None
            raise _not_authorized() from None
        except httpx.HTTPError as exc:
            raise PipelineError(failures.transient, "Google's token service could not be reached.") from exc
        token = self._http.token
        if not token or not token.get("access_token"):
            raise PipelineError(failures.transient, "Google's token service gave no access token.")
        if self._on_token:
            self._on_token(dict(token))


def _user_client(credentials: UserAuthorization, token_url: str, timeout: float) -> OAuth2Client:
    token: dict[str, Any] = {"refresh_token": credentials.refresh_token, "token_type": "Bearer"}
    if credentials.access_token:
        token["access_token"] = credentials.access_token
        token["expires_at"] = credentials.expires_at
    return OAuth2Client(
        client_id=credentials.client_id,
        client_secret=credentials.client_secret,
        token_endpoint_auth_method="client_secret_post",  # the form Google documents
        token=token,
        token_endpoint=token_url,
        timeout=timeout,
    )


def _service_account_client(credentials: ServiceAccount, token_url: str, timeout: float) -> AssertionClient:
    """A client whose token is a JWT grant signed with the account's key (RS256; Google wants the
    scope as a claim, the token endpoint as the audience and no subject)."""
    info = credentials.info
    try:
        key = RSAKey.import_key(info["private_key"])
        issuer = str(info["client_email"])
    except (KeyError, TypeError, ValueError, JoseError):
        raise _not_authorized() from None  # the key's text must not travel in a traceback
    header = {"alg": "RS256"}
    if info.get("private_key_id"):
        header["kid"] = str(info["private_key_id"])
    return AssertionClient(
        token_endpoint=token_url,
        issuer=issuer,
        subject=None,
        audience=token_url,
        claims={"scope": DRIVE_SCOPE},
        key=key,
        header=header,
        timeout=timeout,
    )


def _drive_id(item_id: str, failures: _Failures) -> str:
    """``item_id`` when it has the form of a Drive id, refused before it can reach a URL's path
    or a query's text."""
    if not _DRIVE_ID.fullmatch(item_id):
        raise PipelineError(failures.gone, f"{item_id[:200]!r} is not a Google Drive {failures.what} id.")
    return item_id


def _item_path(item_id: str) -> str:
    return f"/drive/v3/files/{item_id}"


def _size(meta: dict[str, Any]) -> int:
    """A file's size as files.get gives it (a string; absent for Google's own formats)."""
    try:
        return int(meta.get("size") or 0)
    except (TypeError, ValueError) as exc:
        raise _unexpected(_FILE_CALL) from exc


def _raise_for_status(response: httpx.Response, failures: _Failures) -> None:
    if response.is_success:
        return
    status = response.status_code
    response.read()
    if _is_transient_status(status) or _error_reason(response) in _TRANSIENT_REASONS:
        raise PipelineError(failures.transient, f"Google Drive is unavailable (HTTP {status}).")
    raise PipelineError(failures.gone, f"Google Drive cannot give this {failures.what} (HTTP {status}).")


def _is_transient_status(status: int) -> bool:
    return status == 429 or status >= 500


def _error_reason(response: httpx.Response) -> str | None:
    """The first ``reason`` of a Google API error body (``{"error": {"errors": [{"reason"}]}}``)."""
    try:
        return str(response.json()["error"]["errors"][0]["reason"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def _downloadable(mime: str | None) -> bool:
    return not (mime or "").startswith("application/vnd.google-apps.") or mime in EXPORTED_AS_PDF


def _remote_file(item: dict[str, Any]) -> RemoteFile:
    name, mime = str(item.get("name", "")), item.get("mimeType")
    size = int(item["size"]) if item.get("size") is not None else None
    if mime in EXPORTED_AS_PDF:
        mime, size = PDF_TYPE, None  # the export's size is unknown until it is made
        name = name if name.lower().endswith(".pdf") else name + ".pdf"
    modified = _parse_time(item["modifiedTime"])
    return RemoteFile(id=str(item["id"]), name=name, modified_time=modified, size=size, mime_type=mime)


def _parse_time(text: str) -> datetime:
    """An RFC 3339 time of Drive (``2026-11-30T10:00:00.000Z``) as aware UTC, microseconds kept;
    ``ValueError`` for anything else (a time without its offset included)."""
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError("an RFC 3339 time has an offset")
    return parsed.astimezone(UTC)


def _unexpected(failures: _Failures) -> PipelineError:
    return PipelineError(failures.transient, "Google Drive gave an answer the connector cannot read.")


def _not_authorized() -> PipelineError:
    return PipelineError(DRIVE_NOT_AUTHORIZED, NOT_AUTHORIZED_MESSAGE)
