"""Findings of the adversarial review (issue #11), each pinned by a test that failed before its fix."""
from __future__ import annotations

import json
import socket
import subprocess

import pytest

from app import create_app
from app.auth import SESSION_SECRET
from app.config import Settings
from pipeline.fingerprint import bytes_sha256
from pipeline.planning import PlannedSource
from pipeline.types import SourceRef
from storage import accounts, ingestion, jobs, notebooks, revisions
from storage.db import Database
from storage.models import Notebook
from support.live import GNOSI
from support.services import REPO, service_env

from support_api import create_notebook


def _cookie_session(world, who: str = "alice"):  # type: ignore[no-untyped-def]
    """A browser signed in with ``who``'s API token: (client, the sign-in answer)."""
    browser = world.app.test_client()
    signed_in = browser.post("/api/session", json={"token": world.tokens[who]})
    assert signed_in.status_code == 200
    return browser, signed_in.json


def _session_secret(world, browser) -> str:  # type: ignore[no-untyped-def]
    """What the signed session cookie carries (a browser never sees it: the cookie is HttpOnly)."""
    cookie = browser.get_cookie("gnosi_session")
    serializer = world.app.session_interface.get_signing_serializer(world.app)
    return serializer.loads(cookie.value)[SESSION_SECRET]


def _settings(world) -> Settings:  # type: ignore[no-untyped-def]
    return world.app.extensions["gnosi"].settings


def test_a_session_cookie_is_not_a_bearer_token(world) -> None:
    browser, _ = _cookie_session(world)
    secret = _session_secret(world, browser)
    assert browser.get("/api/notebooks").status_code == 200
    response = world.client.get("/api/notebooks", headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 401 and response.json["code"] == "AUTH_INVALID"


def test_an_api_token_is_not_a_session_cookie(world) -> None:
    browser = world.app.test_client()
    with browser.session_transaction() as forged:
        forged[SESSION_SECRET] = world.tokens["alice"]
    response = browser.get("/api/notebooks")
    assert response.status_code == 401 and response.json["code"] == "SESSION_ENDED"


def test_revoking_a_token_ends_the_sessions_opened_with_it(world) -> None:
    browser, _ = _cookie_session(world)
    other_browser, _ = _cookie_session(world, "bob")
    settings = _settings(world)
    with Database(settings.database_path).session() as session:
        assert accounts.revoke_token(session, settings.vault_hash, world.tokens["alice"])
    response = browser.get("/api/session")
    assert response.status_code == 401 and response.json["code"] == "SESSION_ENDED"
    assert other_browser.get("/api/session").status_code == 200


def test_a_role_change_applies_to_open_sessions(world) -> None:
    browser, signed_in = _cookie_session(world)
    settings = _settings(world)
    with Database(settings.database_path).session() as session:
        accounts.add_user(session, settings.vault_hash, "alice", "lab", "viewer")
    response = browser.post(
        "/api/notebooks", json={"title": "t", "resource_ids": ["dmca"]}, headers={"X-CSRF-Token": signed_in["csrf_token"]}
    )
    assert response.status_code == 403 and response.json["code"] == "ROLE_FORBIDDEN"


def _gnosi(world, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:  # type: ignore[no-untyped-def]
    """The real command line, as a process (it sets its own umask, which must not leak into pytest)."""
    settings = _settings(world)
    env = service_env(settings.local_data, settings.vault_path, settings.references_table)
    return subprocess.run(
        [GNOSI, *args], env=env, cwd=REPO, input=stdin, capture_output=True, text=True, timeout=60
    )


def test_cli_revoke_reads_the_token_from_stdin_never_argv(world) -> None:
    browser, _ = _cookie_session(world)
    in_argv = _gnosi(world, "user", "revoke", world.tokens["alice"])
    assert in_argv.returncode == 2  # a usage error: the token never reaches the command
    assert world.call("GET", "/api/notebooks").status_code == 200
    piped = _gnosi(world, "user", "revoke", stdin=world.tokens["alice"] + "\n")
    assert piped.returncode == 0, piped.stderr
    assert world.call("GET", "/api/notebooks").status_code == 401
    assert browser.get("/api/notebooks").status_code == 401
    again = _gnosi(world, "user", "revoke", stdin=world.tokens["alice"])
    assert again.returncode == 1 and "already revoked" in again.stderr


def test_cli_sign_out_ends_every_session_of_a_user(world) -> None:
    first, _ = _cookie_session(world)
    second, _ = _cookie_session(world)
    result = _gnosi(world, "user", "sign-out", "alice")
    assert result.returncode == 0 and "2 session(s)" in result.stdout, result.stderr
    assert first.get("/api/session").status_code == 401 and second.get("/api/session").status_code == 401
    assert world.call("GET", "/api/notebooks").status_code == 200  # API tokens are not sessions


def test_password_guessing_backs_off(world) -> None:
    settings = _settings(world)
    with Database(settings.database_path).session() as session:
        accounts.set_password(accounts.find_user(session, settings.vault_hash, "alice"), "correct horse")
    browser = world.app.test_client()
    statuses = []
    for _ in range(12):
        response = browser.post("/api/session", json={"username": "alice", "password": "wrong"})
        statuses.append(response.status_code)
        if response.status_code == 429:
            break
    assert statuses[:5] == [401] * 5 and statuses[-1] == 429, statuses
    locked = browser.post("/api/session", json={"username": "alice", "password": "correct horse"})
    assert locked.status_code == 429 and locked.json["code"] == "SIGN_IN_THROTTLED"
    assert int(locked.headers["Retry-After"]) >= 1
    other = browser.post("/api/session", json={"username": "bob", "password": "wrong"})
    assert other.status_code == 401  # the lock is per account; this address is far from its own


def test_opening_checks_for_changes_at_a_bounded_rate(world) -> None:
    world.app.extensions["gnosi"].limiter.per_minute["open"] = 2
    notebook_id = create_notebook(world, ["dmca"], visibility="workspace")
    outcomes = [world.call("GET", f"/api/notebooks/{notebook_id}?open=1").json["ingest"] for _ in range(3)]
    assert outcomes[:2] != ["rate_limited"] * 2 and outcomes[2] == "rate_limited"
    assert world.call("GET", f"/api/notebooks/{notebook_id}?open=1", who="bob").json["ingest"] != "rate_limited"
    assert world.call("GET", f"/api/notebooks/{notebook_id}").status_code == 200


def test_rate_limits_are_shared_by_every_process_of_an_instance(world) -> None:
    """A second app on the same LOCAL_DATA is another web process: it sees the same counters."""
    world.app.extensions["gnosi"].limiter.per_minute["refresh"] = 2
    notebook_id = create_notebook(world, ["dmca"], visibility="workspace")
    second = create_app(_settings(world))
    second.extensions["gnosi"].limiter.per_minute["refresh"] = 2
    path, headers = f"/api/notebooks/{notebook_id}/refresh", world.headers("alice")
    assert world.client.post(path, headers=headers).status_code == 202
    assert second.test_client().post(path, headers=headers).status_code == 202
    limited = second.test_client().post(path, headers=headers)
    assert limited.status_code == 429 and limited.json["code"] == "RATE_LIMITED"


def test_attachments_are_sandboxed_downloads(world, tmp_path) -> None:
    """An HTML attachment (any attachment) is served as a download under a sandboxing CSP."""
    notebook_id = create_notebook(world, ["dmca"])
    page = tmp_path / "page.html"
    page.write_bytes(b"<script>document.title='pwned'</script>")
    digest = bytes_sha256(page.read_bytes())
    world.app.extensions["gnosi"].blobs.put_file(page, digest)
    with Database(_settings(world).database_path).session() as session:
        notebook = session.get(Notebook, notebook_id)
        job = jobs.latest_job(session, notebook)
        ref = SourceRef("dmca", "file", "attachment", "files/page.html")
        ingestion.start_revision(session, job, notebook, [PlannedSource(ref, "extract", digest)])
        source = revisions.sources(session, job.revision_id)[0]
        source.content_hash, source.mime, source.state = digest, "text/html", "available"
        revision_id, source_id = job.revision_id, source.id
    response = world.call("GET", f"/api/notebooks/{notebook_id}/sources/{source_id}/file?revision={revision_id}")
    assert response.status_code == 200 and response.data == page.read_bytes()
    assert response.headers["Content-Disposition"].startswith("attachment")
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    policy = response.headers["Content-Security-Policy"]
    assert policy.startswith("sandbox") and "script-src" not in policy and "default-src 'none'" in policy


@pytest.mark.parametrize(
    "body",
    [
        '{"title": "\\ud800", "resource_ids": ["dmca"]}',
        '{"title": "ok", "resource_ids": ["dmca"], "x": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"title": "ok", "resource_ids": ["dmca"], "x": ' + "[" * 40 + "]" * 40 + "}",
    ],
    ids=["lone-surrogate", "nested-5000", "nested-40"],
)
def test_hostile_json_is_a_json_400(world, body: str) -> None:
    response = world.call("POST", "/api/notebooks", data=body, content_type="application/json")
    assert response.status_code == 400, response.data[:200]
    assert response.json["code"] in ("INVALID_UNICODE", "MALFORMED_JSON", "JSON_TOO_DEEP")


def test_a_bad_chat_message_spends_no_rate_limit_slot(world) -> None:
    world.app.extensions["gnosi"].limiter.per_minute["chat"] = 1
    notebook_id = create_notebook(world, ["dmca"])
    bad = world.call(
        "POST", "/api/chat", data=json.dumps({"notebook_id": notebook_id, "message": "\ud800"}),
        content_type="application/json",
    )
    assert bad.status_code == 400 and bad.json["code"] == "INVALID_UNICODE"
    good = world.call("POST", "/api/chat", json={"notebook_id": notebook_id, "message": "copyright"})
    assert good.json["code"] != "RATE_LIMITED"  # no revision yet: refused for that reason instead


@pytest.mark.parametrize("title", ["nul\x00byte", "bidi \u202eevil", "isolate \u2066x", "bell\x07"])
def test_titles_refuse_control_and_bidi_override_characters(world, title: str) -> None:
    response = world.call("POST", "/api/notebooks", json={"title": title, "resource_ids": ["dmca"]})
    assert response.status_code == 400 and response.json["code"] == "FIELD_INVALID"
    notebook_id = create_notebook(world, ["dmca"])
    response = world.call("PATCH", f"/api/notebooks/{notebook_id}", json={"title": title})
    assert response.status_code == 400 and response.json["code"] == "FIELD_INVALID"


def test_huge_page_numbers_are_a_json_400(world) -> None:
    for path in ("/api/notebooks", "/api/notebooks/resources"):
        response = world.call("GET", f"{path}?page=99999999999999999999")
        assert response.status_code == 400 and response.json["code"] == "BAD_PAGINATION"


def test_creating_and_adding_need_at_least_one_resource(world) -> None:
    response = world.call("POST", "/api/notebooks", json={"title": "empty", "resource_ids": []})
    assert response.status_code == 400 and response.json["code"] == "FIELD_INVALID"
    notebook_id = create_notebook(world, ["dmca"])
    response = world.call("POST", f"/api/notebooks/{notebook_id}/sources", json={"resource_ids": []})
    assert response.status_code == 400 and response.json["code"] == "FIELD_INVALID"


@pytest.mark.parametrize("target", ["/\\evil.example", "/\\/evil.example", "//evil.example", "/\t/evil.example",
                                    "https://evil.example/", "/%5Cevil.example"])
def test_sign_in_never_sends_a_user_to_another_site(world, target: str) -> None:
    page = world.client.get("/sign-in", query_string={"next": target}).get_data(as_text=True)
    assert 'data-next="/notebooks"' in page or (target.startswith("/%") and f'data-next="{target}"' in page)


def test_a_broker_that_refuses_the_message_still_answers_the_truth(tmp_path, world) -> None:
    """The notebook and its job are committed; the job waits for the sweeper instead of a 500."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    settings = _settings(world)
    env = service_env(settings.local_data, settings.vault_path, settings.references_table, f"redis://127.0.0.1:{port}/0")
    app = create_app(Settings.from_env(env))
    response = app.test_client().post(
        "/api/notebooks", json={"title": "t", "resource_ids": ["dmca"]}, headers=world.headers("alice")
    )
    assert response.status_code == 201, response.json
    assert response.json["ingest"] == "queued" and response.json["job"]["state"] == "queued"
    with Database(settings.database_path).reader() as session:
        notebook = session.get(Notebook, response.json["id"])
        assert notebooks.member_ids(session, notebook) == ["dmca"]


