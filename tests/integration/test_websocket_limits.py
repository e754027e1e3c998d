"""Long-lived connections cannot starve HTTP, and chat sockets are bounded: a real `gnosi serve`.

Two deployments: a patient one (a long authentication deadline, so idle sockets stay open while
HTTP is measured; a small global cap) and a strict one (one-second deadline, two-second idle
timeout, two sockets per user, a slow scripted LLM to show a turn in progress is not idle).
"""
from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from simple_websocket import Client, ConnectionClosed

from app.config import Settings
from app.serve import REQUEST_HEAD_SECONDS
from storage import accounts
from storage.db import Database
from support.live import Deployment, add_user, deployment
from support.pressure import idle_websockets, send_upgrade, slowloris
from support.services import fake_openai_server
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

IDLE_SOCKETS = 50
SLOW_REQUESTS = 20
GLOBAL_CAP = 60
WEB_PROCESSES = 2  # the default


def ws_url(d: Deployment) -> str:
    return str(d.api.http.base_url).rstrip("/").replace("http://", "ws://") + "/api/chat/ws"


def port_of(d: Deployment) -> int:
    return int(d.env["GNOSI_PORT"])


def internal_secret(d: Deployment) -> str:
    return (Path(d.env["LOCAL_DATA"]) / "system" / "internal-token").read_text().strip()


def vault_hash(d: Deployment) -> str:
    return Settings.from_env(d.env).vault_hash


def socket_claims(d: Deployment, expected: int) -> list[str]:
    """The open sockets' claims (app/api/ws_slots.py), once there are ``expected``: a client
    sees its handshake answered just before the server's handler claims the slot."""
    folder = Path(d.env["LOCAL_DATA"]) / "system" / "web" / "sockets"
    deadline = time.monotonic() + 10
    while len(claims := [path.name for path in folder.glob("[0-9]*")]) != expected:
        assert time.monotonic() < deadline, f"{len(claims)} sockets claimed, not {expected}"
        time.sleep(0.05)
    return claims


def close_quietly(ws: Client) -> None:
    try:
        ws.close()
    except ConnectionClosed:
        pass  # the server closed it first


def connect(d: Deployment, token: str | None = None) -> Client:
    return Client.connect(ws_url(d), headers={"Authorization": f"Bearer {token}"} if token else {})


def close_of(ws: Client, timeout: float) -> tuple[int, str, float]:
    """Wait for the server to close the socket: (code, reason, seconds waited)."""
    started = time.monotonic()
    try:
        while time.monotonic() - started < timeout:
            ws.receive(timeout=timeout)  # messages before the close are not what this waits for
    except ConnectionClosed as closed:
        return closed.reason, closed.message, time.monotonic() - started
    pytest.fail(f"the server left the socket open for {timeout} s")


def refusal_at_handshake(d: Deployment, token: str) -> tuple[int, str]:
    """(close code, reason) of a socket the server closes right after its handshake. Read raw: a
    client library can see the connection end before it parses the close frame that came first."""
    with send_upgrade("127.0.0.1", port_of(d), timeout=10, headers={"Authorization": f"Bearer {token}"}) as sock:
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    head, _, frame = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101") and frame[:1] == b"\x88", data  # FIN + close opcode
    payload = frame[2:2 + (frame[1] & 0x7F)]  # unmasked, and a close payload is under 126 bytes
    return int.from_bytes(payload[:2], "big"), payload[2:].decode()


def answer(ws: Client, message: dict | str) -> dict:
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(ws.receive(timeout=30))


def answer_once_a_slot_frees(d: Deployment, token: str) -> dict:
    """Open a socket and ping it, retrying for 10 s while the server still counts closed sockets
    (it sees a close asynchronously): the first answer once a slot was given back."""
    deadline = time.monotonic() + 10
    while True:
        ws = connect(d, token)
        try:
            return answer(ws, {"type": "ping"})
        except ConnectionClosed:
            assert time.monotonic() < deadline, "the closed sockets' slots were not released"
            time.sleep(0.2)
        finally:
            close_quietly(ws)


@pytest.fixture(scope="module")
def patient(tmp_path_factory) -> Iterator[Deployment]:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("patient")
    vault = VaultBuilder(tmp / "vault")
    with deployment(tmp, vault.root, vault.table_id, redis=False,
                    GNOSI_WS_AUTH_SECONDS="120", GNOSI_WS_MAX_SOCKETS=str(GLOBAL_CAP)) as d:
        d.start_web()
        yield d


def test_idle_sockets_and_slow_requests_do_not_starve_http(patient: Deployment) -> None:
    """HTTP is served while every idle socket and half-sent request still holds its connection:
    a starved request would be answered only once a deadline freed one (the request-head deadline
    drops the slow requests after REQUEST_HEAD_SECONDS, the authentication deadline the sockets)."""
    d = patient
    with idle_websockets("127.0.0.1", port_of(d), IDLE_SOCKETS, timeout=10) as idle, \
            slowloris("127.0.0.1", port_of(d), SLOW_REQUESTS) as attack, \
            httpx.Client(base_url=str(d.api.http.base_url), timeout=REQUEST_HEAD_SECONDS * 3) as http:
        time.sleep(0.5)  # the slow requests are on the server now
        session = http.get("/api/session", headers={"Authorization": f"Bearer {d.token}"})
        internal = http.get("/internal/jobs/no-such-job", headers={"Authorization": f"Bearer {internal_secret(d)}"})
        assert attack.dropped == 0, "HTTP was answered only after the server dropped slow requests"
        assert idle.failed == 0 and idle.closed_by_server() == 0
        assert session.status_code == 200 and session.json()["user"]["name"] == "alice"
        assert internal.status_code == 404 and internal.json()["code"] == "JOB_NOT_FOUND"


def test_a_half_sent_request_is_dropped_after_the_request_head_deadline(patient: Deployment) -> None:
    with slowloris("127.0.0.1", port_of(patient), 3) as attack:
        time.sleep(REQUEST_HEAD_SECONDS + 2)
    assert attack.dropped >= 3, "a trickled request head was kept past the deadline"


def test_the_global_cap_refuses_with_1013_and_frees_slots_on_close(patient: Deployment) -> None:
    d = patient
    with idle_websockets("127.0.0.1", port_of(d), GLOBAL_CAP) as idle:
        assert idle.failed == 0
        claims = socket_claims(d, GLOBAL_CAP)
        # Both web processes hold sockets: the cap is the sum over them, not each one's own.
        assert len({claim.split(".")[0] for claim in claims}) == WEB_PROCESSES
        code, reason = refusal_at_handshake(d, d.token)
        assert code == 1013 and "try again" in reason
    reply = answer_once_a_slot_frees(d, d.token)
    assert reply["event"] == "error" and reply["data"]["code"] == "UNKNOWN_MESSAGE"


@pytest.mark.parametrize(("path", "headers", "status", "code"), [
    ("/api/notebooks?q=" + "x" * 10_000, {}, 414, "URI_TOO_LONG"),
    ("/api/notebooks", {"X-Big": "y" * 10_000}, 431, "HEADERS_TOO_LARGE"),
    ("/api/notebooks", {f"X-Many-{i}": "1" for i in range(200)}, 431, "HEADERS_TOO_LARGE"),
])
def test_requests_gunicorn_refuses_get_json_errors(patient: Deployment, path: str, headers: dict[str, str],
                                                   status: int, code: str) -> None:
    with httpx.Client(base_url=str(patient.api.http.base_url), timeout=10) as http:
        response = http.get(path, headers=headers)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["code"] == code and response.json()["message"]


def test_a_malformed_request_line_gets_a_json_400(patient: Deployment) -> None:
    with socket.create_connection(("127.0.0.1", port_of(patient)), timeout=10) as sock:
        sock.sendall(b"GET /api/notebooks HTTP/9\r\nHost: x\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"application/json" in head
    assert json.loads(body)["code"] == "BAD_REQUEST"


# A scripted answer that streams for about four seconds: twice the strict idle timeout.
SLOW_ANSWER = {"text": "Owners send a sworn notice [{chunk:0}]. " + "More words here. " * 20, "piece_chars": 8, "delay": 0.1}


@pytest.fixture(scope="module")
def strict(tmp_path_factory) -> Iterator[tuple[Deployment, str]]:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("strict")
    vault = VaultBuilder(tmp / "vault")
    vault.pdf_record("dmca", "dmca.pdf")
    with fake_openai_server(tmp, [SLOW_ANSWER]) as (llm_url, _), \
            deployment(tmp, vault.root, vault.table_id, redis=False, GNOSI_LLM_BASE_URL=llm_url,
                       GNOSI_LLM_MODEL="fake", GNOSI_WS_AUTH_SECONDS="1", GNOSI_WS_IDLE_SECONDS="2",
                       GNOSI_WS_SOCKETS_PER_USER="2") as d:
        d.start_web()
        response = d.api.post("/api/notebooks", {"title": "T", "visibility": "workspace", "resource_ids": ["dmca"]})
        notebook_id = response.json()["id"]
        assert d.api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
        yield d, notebook_id


def test_a_socket_that_does_not_authenticate_in_time_is_closed_with_1008(strict) -> None:
    d, _ = strict
    ws = connect(d)
    code, reason, waited = close_of(ws, timeout=10)
    assert code == 1008 and "Authentication deadline" in reason and waited < 5


def test_an_auth_message_before_the_deadline_keeps_the_socket_until_it_is_idle(strict) -> None:
    d, _ = strict
    ws = connect(d)
    assert answer(ws, {"type": "auth", "token": d.token})["event"] == "auth"
    code, reason, waited = close_of(ws, timeout=10)
    assert code == 4408 and "Idle" in reason and 1.5 < waited < 6


def test_a_turn_in_progress_is_not_idle(strict) -> None:
    d, notebook_id = strict
    ws = connect(d, d.token)
    try:
        ws.send(json.dumps({"type": "turn", "notebook_id": notebook_id, "message": "What is the takedown notice?"}))
        started, events = time.monotonic(), []
        while not events or events[-1]["event"] not in ("done", "error"):
            events.append(json.loads(ws.receive(timeout=30)))
        assert events[-1]["event"] == "done", events[-1]
        assert time.monotonic() - started > 3, "the scripted answer streams for longer than the idle timeout"
        code, _, waited = close_of(ws, timeout=10)  # the idle clock starts again when the turn ends
        assert code == 4408 and waited > 1.5
    finally:
        close_quietly(ws)


def test_the_per_user_cap_refuses_with_4429_and_frees_slots_on_close(strict) -> None:
    d, _ = strict
    token = add_user(d.env, "capped", "lab", "editor")
    first, second = connect(d, token), connect(d, token)
    third = connect(d)
    assert answer(first, {"type": "ping"})["data"]["code"] == "UNKNOWN_MESSAGE"
    assert answer(second, {"type": "ping"})["data"]["code"] == "UNKNOWN_MESSAGE"
    third.send(json.dumps({"type": "auth", "token": token}))  # the cap holds on the auth-message path too
    code, reason, _ = close_of(third, timeout=10)
    assert code == 4429 and "per user" in reason
    assert refusal_at_handshake(d, token)[0] == 4429
    close_quietly(first)
    assert answer_once_a_slot_frees(d, token)["data"]["code"] == "UNKNOWN_MESSAGE"
    close_quietly(second)


@pytest.mark.parametrize("how", ["header", "auth_message"])
def test_a_revoked_token_fails_at_the_sockets_next_turn_then_must_sign_in_again(strict, how: str) -> None:
    d, notebook_id = strict
    token = add_user(d.env, f"revoked-{how}", "lab", "editor")
    ws = connect(d, token if how == "header" else None)
    try:
        if how == "auth_message":
            assert answer(ws, {"type": "auth", "token": token})["event"] == "auth"
        missing = answer(ws, {"type": "turn", "notebook_id": "no-such-notebook", "message": "hello?"})
        assert missing["data"]["code"] == "NOTEBOOK_NOT_FOUND"  # signed in and resolved once
        with Database(d.database).session() as session:
            assert accounts.revoke_token(session, vault_hash(d), token)
        refused = answer(ws, {"type": "turn", "notebook_id": notebook_id, "message": "hello?"})
        assert refused["event"] == "error" and refused["data"]["code"] == "AUTH_INVALID"
        code, _, waited = close_of(ws, timeout=10)  # it must sign in again within the deadline
        assert code == 1008 and waited < 5
    finally:
        close_quietly(ws)


@pytest.mark.parametrize("how", ["sign_out", "revoke_origin_token"])
def test_a_cookie_socket_ends_with_its_session(strict, how: str) -> None:
    """The dashboard's socket authenticates with the session cookie; signing out (in another tab)
    or revoking the token the session was opened with ends it at the socket's next turn."""
    d, notebook_id = strict
    token = add_user(d.env, f"cookie-{how}", "lab", "editor")
    browser = httpx.Client(base_url=str(d.api.http.base_url))
    signed_in = browser.post("/api/session", json={"token": token})
    assert signed_in.status_code == 200
    cookie = "; ".join(f"{name}={value}" for name, value in browser.cookies.items())
    ws = Client.connect(ws_url(d), headers={"Cookie": cookie})
    try:
        missing = answer(ws, {"type": "turn", "notebook_id": "no-such-notebook", "message": "hello?"})
        assert missing["data"]["code"] == "NOTEBOOK_NOT_FOUND"  # signed in by the cookie
        if how == "sign_out":
            assert browser.delete("/api/session", headers={"X-CSRF-Token": signed_in.json()["csrf_token"]}).status_code == 204
        else:
            with Database(d.database).session() as session:
                assert accounts.revoke_token(session, vault_hash(d), token)
        refused = answer(ws, {"type": "turn", "notebook_id": notebook_id, "message": "hello?"})
        assert refused["event"] == "error" and refused["data"]["code"] == "SESSION_ENDED"
    finally:
        close_quietly(ws)
        browser.close()


def test_a_lowered_role_applies_at_the_sockets_next_turn(strict) -> None:
    d, notebook_id = strict
    token = add_user(d.env, "demoted", "lab", "editor")
    ws = connect(d, token)
    try:
        assert answer(ws, {"type": "turn", "notebook_id": "no-such-notebook", "message": "hi"})["data"]["code"] == "NOTEBOOK_NOT_FOUND"
        with Database(d.database).session() as session:  # the CLI would take longer than the idle timeout
            accounts.add_user(session, vault_hash(d), "demoted", "lab", "viewer")
        refused = answer(ws, {"type": "turn", "notebook_id": notebook_id, "message": "hi"})
        assert refused["event"] == "error" and refused["data"]["code"] == "READ_ONLY"
    finally:
        close_quietly(ws)


@pytest.mark.parametrize(("raw", "code"), [
    ("[" * 5000 + "]" * 5000, "MALFORMED_JSON"),
    ('{"type": "turn", "x": ' + "[" * 40 + "]" * 40 + "}", "JSON_TOO_DEEP"),
    ('{"type": "turn", "notebook_id": "x", "message": "\\ud800"}', "INVALID_UNICODE"),
    ('{"type": "auth", "token": "\\udfff"}', "INVALID_UNICODE"),
    ("not json", "MALFORMED_JSON"),
    ("[1, 2]", "MALFORMED_JSON"),
])
def test_bad_messages_answer_an_error_and_keep_the_socket(strict, raw: str, code: str) -> None:
    d, _ = strict
    ws = connect(d, d.token)
    try:
        error = answer(ws, raw)
        assert error["event"] == "error" and error["data"]["code"] == code
        assert answer(ws, {"type": "auth", "token": d.token})["event"] == "auth"
    finally:
        close_quietly(ws)


def test_a_message_over_the_size_limit_closes_the_socket_with_1009(strict) -> None:
    d, _ = strict
    ws = connect(d, d.token)
    ws.send(json.dumps({"type": "turn", "notebook_id": "x", "message": "y" * 1_100_000}))
    code, _, _ = close_of(ws, timeout=10)
    assert code == 1009
