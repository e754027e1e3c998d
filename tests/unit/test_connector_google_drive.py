"""The Google Drive connector against a local fake of Drive v3 and Google's token endpoint, and
the encryption of stored authorisations."""
from __future__ import annotations

import io
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from support.fake_drive import FakeDrive, service_account_info

from pipeline.connectors.base import (
    DRIVE_NOT_AUTHORIZED,
    FILE_TOO_LARGE,
    FILE_UNAVAILABLE,
    FOLDER_UNAVAILABLE,
    FolderInfo,
    all_files,
)
from pipeline.connectors.google_drive import (
    DRIVE_SCOPE,
    DRIVE_UNAVAILABLE,
    NOT_AUTHORIZED_MESSAGE,
    GoogleDriveConnector,
    ServiceAccount,
    UserAuthorization,
)
from pipeline.connectors.secrets import decrypt_authorization, encrypt_authorization
from pipeline.types import PipelineError

DOC_TYPE = "application/vnd.google-apps.document"
Connect = Callable[..., GoogleDriveConnector]
WHEN = datetime(2026, 11, 30, 10, 0, 0, 250000, tzinfo=UTC)


@pytest.fixture
def drive() -> Iterator[FakeDrive]:
    with FakeDrive() as fake:
        yield fake


@pytest.fixture
def owner(drive: FakeDrive) -> UserAuthorization:
    return UserAuthorization(drive.client_id, drive.client_secret, drive.issue_refresh_token())


@pytest.fixture
def connect(drive: FakeDrive) -> Iterator[Connect]:
    """Connectors to the fake, closed after the test."""
    made: list[GoogleDriveConnector] = []

    def make(credentials: UserAuthorization | ServiceAccount | None, **options: Any) -> GoogleDriveConnector:
        options = {"api_url": drive.url, "token_url": drive.token_url, **options}
        made.append(GoogleDriveConnector(credentials, **options))
        return made[-1]

    yield make
    for connector in made:
        connector.close()


@pytest.fixture
def connector(owner: UserAuthorization, connect: Connect) -> GoogleDriveConnector:
    """A connector with the owner's stored authorisation."""
    return connect(owner)


def failure(call: Callable[[], object]) -> PipelineError:
    with pytest.raises(PipelineError) as caught:
        call()
    return caught.value


def test_lists_every_file_over_pages_in_name_order(drive: FakeDrive, connector: GoogleDriveConnector) -> None:
    folder = drive.add_folder("Papers")
    names = [f"paper-{n:03d}.pdf" for n in reversed(range(250))]
    for name in names:
        drive.add_file(folder, name, b"%PDF", "application/pdf", WHEN)

    first = connector.list_files(folder)
    files = all_files(connector, folder)

    assert len(first.files) == 100 and first.next_page_token
    assert [f.name for f in files] == sorted(names)
    assert len({f.id for f in files}) == 250
    lists = [r["params"] for r in drive.requests if r["path"] == "/drive/v3/files"]
    assert len(lists) == 4  # one page, then the three pages of all_files
    assert lists[0]["q"] == (
        f"'{folder}' in parents and trashed = false and mimeType != 'application/vnd.google-apps.folder'"
    )
    assert lists[0]["fields"] == "nextPageToken, files(id, name, mimeType, modifiedTime, size)"
    assert drive.media_requests() == 0


def test_a_listed_file_has_drive_metadata_and_google_formats_list_as_pdf(
    drive: FakeDrive, connector: GoogleDriveConnector
) -> None:
    folder = drive.add_folder("Papers")
    drive.add_file(folder, "notes.txt", b"hello", "text/plain", WHEN)
    drive.add_file(folder, "Plan", b"%PDF plan", DOC_TYPE, WHEN)
    drive.add_file(folder, "Survey", b"", "application/vnd.google-apps.form", WHEN)
    drive.add_folder("Subfolder", parent=folder)
    drive.trash(drive.add_file(folder, "old.txt", b"old", "text/plain", WHEN))

    files = connector.list_files(folder).files

    assert [(f.name, f.mime_type, f.size) for f in files] == [
        ("Plan.pdf", "application/pdf", None),
        ("notes.txt", "text/plain", 5),
    ]
    assert files[1].modified_time == WHEN and files[1].modified_time.tzinfo is not None


def test_folder_metadata(drive: FakeDrive, connector: GoogleDriveConnector) -> None:
    folder = drive.add_folder("Field notes")

    assert connector.folder(folder) == FolderInfo(id=folder, name="Field notes")


@pytest.mark.parametrize("change", ["trash", "remove"])
def test_a_trashed_deleted_or_moved_away_folder_is_unavailable(
    drive: FakeDrive, connector: GoogleDriveConnector, change: str
) -> None:
    folder = drive.add_folder("Papers")
    drive.add_file(folder, "a.txt", b"a", "text/plain", WHEN)
    getattr(drive, change)(folder)

    assert failure(lambda: connector.folder(folder)).code == FOLDER_UNAVAILABLE
    # Drive lists such a folder as empty: the connector must not take that for "no files".
    assert failure(lambda: connector.list_files(folder)).code == FOLDER_UNAVAILABLE


def test_a_file_or_a_malformed_id_is_not_a_folder(drive: FakeDrive, connector: GoogleDriveConnector) -> None:
    folder = drive.add_folder("Papers")
    file_id = drive.add_file(folder, "a.txt", b"a", "text/plain", WHEN)

    assert failure(lambda: connector.folder(file_id)).code == FOLDER_UNAVAILABLE
    before = len(drive.requests)
    assert failure(lambda: connector.list_files("x' or name contains '")).code == FOLDER_UNAVAILABLE
    assert len(drive.requests) == before  # refused before any request


def test_drive_failures_are_transient(drive: FakeDrive, connector: GoogleDriveConnector) -> None:
    folder = drive.add_folder("Papers")
    for n in range(101):
        drive.add_file(folder, f"{n:03d}.txt", b"x", "text/plain", WHEN)
    token = connector.list_files(folder).next_page_token

    drive.fail_api(503, 429)
    assert failure(lambda: connector.folder(folder)).code == FOLDER_UNAVAILABLE
    assert failure(lambda: connector.list_files(folder, token)).code == DRIVE_UNAVAILABLE
    assert [f.name for f in connector.list_files(folder, token).files] == ["100.txt"]


def test_an_unreachable_drive_is_transient(owner: UserAuthorization) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"  # nothing listens there
    with GoogleDriveConnector(owner, api_url=url, token_url=url + "/token", timeout=5) as connector:
        assert failure(lambda: connector.folder("abc")).code == FOLDER_UNAVAILABLE
        assert failure(lambda: connector.list_files("abc", "page-2")).code == DRIVE_UNAVAILABLE


def test_download_streams_the_file_bytes(drive: FakeDrive, connector: GoogleDriveConnector) -> None:
    folder = drive.add_folder("Papers")
    data = os.urandom(3 * (1 << 20) + 7)
    file_id = drive.add_file(folder, "scan.pdf", data, "application/pdf", WHEN)
    into = io.BytesIO()

    assert connector.download(folder, file_id, into, len(data)) == len(data)

    assert into.getvalue() == data
    assert drive.media_requests() == 1


def test_a_google_doc_downloads_as_its_pdf_export(drive: FakeDrive, connector: GoogleDriveConnector) -> None:
    folder = drive.add_folder("Papers")
    doc = drive.add_file(folder, "Plan", b"%PDF-1.7 the plan", DOC_TYPE, WHEN)
    into = io.BytesIO()

    connector.download(folder, doc, into, 1000)

    assert into.getvalue() == b"%PDF-1.7 the plan"
    exports = [r for r in drive.requests if r["path"].endswith("/export")]
    assert [r["params"]["mimeType"] for r in exports] == ["application/pdf"]


def test_a_file_larger_than_the_limit_is_refused_before_its_bytes_are_fetched(
    drive: FakeDrive, connector: GoogleDriveConnector
) -> None:
    folder = drive.add_folder("Papers")
    file_id = drive.add_file(folder, "big.bin", b"x" * 2000, "application/octet-stream", WHEN)
    doc = drive.add_file(folder, "Long", b"%PDF" + b"x" * 2000, DOC_TYPE, WHEN)  # its size: once exported

    assert failure(lambda: connector.download(folder, file_id, io.BytesIO(), 1999)).code == FILE_TOO_LARGE
    assert drive.media_requests() == 0
    assert failure(lambda: connector.download(folder, doc, io.BytesIO(), 1999)).code == FILE_TOO_LARGE


@pytest.mark.parametrize("change", ["trash", "remove", "move"])
def test_a_file_gone_from_the_folder_since_listed_is_unavailable(
    drive: FakeDrive, connector: GoogleDriveConnector, change: str
) -> None:
    folder, elsewhere = drive.add_folder("Papers"), drive.add_folder("Elsewhere")
    file_id = drive.add_file(folder, "a.txt", b"a", "text/plain", WHEN)
    if change == "move":
        drive.move(file_id, elsewhere)
    else:
        getattr(drive, change)(file_id)

    assert failure(lambda: connector.download(folder, file_id, io.BytesIO(), 100)).code == FILE_UNAVAILABLE
    assert drive.media_requests() == 0


def test_an_expired_access_token_is_refreshed_and_handed_to_on_token(
    drive: FakeDrive, owner: UserAuthorization, connect: Connect
) -> None:
    folder = drive.add_folder("Papers")
    stale = replace(owner, access_token="ya29.stale", expires_at=1)
    tokens: list[dict[str, Any]] = []

    assert connect(stale, on_token=tokens.append).folder(folder).name == "Papers"

    assert len(drive.token_requests()) == 1 and len(tokens) == 1
    assert tokens[0]["access_token"].startswith("ya29.") and tokens[0]["expires_at"] > 1


def test_a_kept_access_token_is_used_and_a_401_refreshes_it_once(
    drive: FakeDrive, owner: UserAuthorization, connect: Connect
) -> None:
    folder = drive.add_folder("Papers")
    tokens: list[dict[str, Any]] = []
    connect(owner, on_token=tokens.append).folder(folder)
    kept = replace(owner, access_token=tokens[0]["access_token"], expires_at=tokens[0]["expires_at"])
    connector = connect(kept, on_token=tokens.append)

    connector.folder(folder)
    assert len(drive.token_requests()) == 1  # the kept token served

    drive.expire_access_tokens()  # Google may end a token before its time
    assert connector.folder(folder).id == folder
    assert len(drive.token_requests()) == 2 and len(tokens) == 2


def test_a_revoked_authorization_is_not_authorized(
    drive: FakeDrive, owner: UserAuthorization, connector: GoogleDriveConnector
) -> None:
    folder = drive.add_folder("Papers")
    drive.revoke(owner.refresh_token)

    error = failure(lambda: connector.list_files(folder))

    assert error.code == DRIVE_NOT_AUTHORIZED and error.message == NOT_AUTHORIZED_MESSAGE
    assert_no_secret(error, owner.refresh_token, owner.client_secret)


def test_a_401_on_a_fresh_token_is_not_authorized(drive: FakeDrive, connector: GoogleDriveConnector) -> None:
    folder = drive.add_folder("Papers")
    drive.token_lifetime_s = 0  # every token is dead on arrival

    assert failure(lambda: connector.folder(folder)).code == DRIVE_NOT_AUTHORIZED
    assert len(drive.token_requests()) == 1  # no loop of refreshes


@pytest.mark.parametrize(
    "credentials",
    [
        None,
        UserAuthorization("client", "secret", ""),
        ServiceAccount({"client_email": "a@b.c"}),
        ServiceAccount({"private_key": "junk", "client_email": "a@b.c"}),
    ],
)
def test_a_missing_or_broken_authorization_is_not_authorized(
    drive: FakeDrive, credentials: UserAuthorization | ServiceAccount | None
) -> None:
    error = failure(lambda: GoogleDriveConnector(credentials, api_url=drive.url, token_url=drive.token_url))

    assert error.code == DRIVE_NOT_AUTHORIZED and error.message == NOT_AUTHORIZED_MESSAGE


def test_a_service_account_signs_its_own_grant(drive: FakeDrive, connect: Connect) -> None:
    info = service_account_info(token_uri=drive.token_url)
    drive.register_service_account(info)
    folder = drive.add_folder("Shared with the robot")
    tokens: list[dict[str, Any]] = []
    connector = connect(ServiceAccount(info), on_token=tokens.append)

    assert connector.folder(folder).name == "Shared with the robot"
    drive.expire_access_tokens()
    connector.folder(folder)

    grants = drive.token_requests()
    assert [g["params"]["grant_type"] for g in grants] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"] * 2
    claims = [g["params"]["claims"] for g in grants]
    assert claims[0]["iss"] == info["client_email"] and claims[0]["aud"] == drive.token_url
    assert claims[0]["scope"] == DRIVE_SCOPE and "sub" not in claims[0]
    assert claims[0]["jti"] != claims[1]["jti"] and len(tokens) == 2


def test_a_service_account_key_google_does_not_know_is_refused(drive: FakeDrive, connect: Connect) -> None:
    registered = service_account_info()
    drive.register_service_account(registered)
    impostor = service_account_info(client_email=registered["client_email"])  # same account, another key
    folder = drive.add_folder("Papers")

    error = failure(lambda: connect(ServiceAccount(impostor)).folder(folder))

    assert error.code == DRIVE_NOT_AUTHORIZED and error.message == NOT_AUTHORIZED_MESSAGE
    key_body = impostor["private_key"].splitlines()[1]
    assert_no_secret(error, key_body)
    assert drive.media_requests() == 0


def test_credentials_hide_their_secrets_from_repr(owner: UserAuthorization) -> None:
    info = {"client_email": "a@b.c", "private_key": "-----BEGIN PRIVATE KEY-----\nSECRETKEY"}
    shown = repr(owner) + repr(UserAuthorization("c", "s3cr3t", "r3fr3sh", "ya29.acc3ss", 1))
    shown += repr(ServiceAccount(info))

    for secret in (owner.refresh_token, owner.client_secret, "s3cr3t", "r3fr3sh", "ya29.acc3ss", "SECRETKEY"):
        assert secret not in shown


def assert_no_secret(error: BaseException, *secrets: str) -> None:
    """No secret in the error's text, nor in any error it was raised from or during."""
    seen: BaseException | None = error
    while seen is not None:
        for secret in secrets:
            assert secret not in str(seen) and secret not in repr(seen)
        seen = seen.__cause__ or seen.__context__


def test_a_stored_authorization_round_trips_encrypted() -> None:
    authorization = {"refresh_token": "1//refresh-me", "client_id": "c"}

    stored = encrypt_authorization("instance secret", authorization)

    assert "refresh-me" not in stored
    assert decrypt_authorization("instance secret", stored) == authorization


def test_a_stored_authorization_under_another_key_or_changed_is_not_authorized() -> None:
    stored = encrypt_authorization("instance secret", {"refresh_token": "1//refresh-me"})
    middle = len(stored) // 2
    tampered = stored[:middle] + ("A" if stored[middle] != "A" else "B") + stored[middle + 1 :]

    attempts = [("another secret", stored), ("instance secret", tampered), ("instance secret", "junk")]
    for secret, text in attempts:
        error = failure(lambda: decrypt_authorization(secret, text))
        assert error.code == DRIVE_NOT_AUTHORIZED
        assert_no_secret(error, "refresh-me")
