"""Dashboard sessions (HttpOnly cookie + CSRF), security headers and rate limits."""
from __future__ import annotations

from storage import accounts
from storage.db import Database

from support_api import create_notebook


def _set_password(world, name: str, password: str) -> None:  # type: ignore[no-untyped-def]
    settings = world.app.extensions["gnosi"].settings
    with Database(settings.database_path).session() as session:
        accounts.set_password(accounts.find_user(session, settings.vault_hash, name), password)


def test_password_sign_in_sets_a_safe_cookie_and_requires_csrf(world) -> None:
    _set_password(world, "alice", "correct horse")
    browser = world.app.test_client()
    wrong = browser.post("/api/session", json={"username": "alice", "password": "nope"})
    assert wrong.status_code == 401 and wrong.json["code"] == "SIGN_IN_FAILED"
    unknown = browser.post("/api/session", json={"username": "nobody", "password": "nope"})
    assert unknown.json == wrong.json
    signed_in = browser.post("/api/session", json={"username": "alice", "password": "correct horse"})
    assert signed_in.status_code == 200 and signed_in.json["user"]["name"] == "alice"
    cookie = signed_in.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert browser.get("/api/notebooks").status_code == 200
    body = {"title": "From the browser", "resource_ids": ["dmca"]}
    forged = browser.post("/api/notebooks", json=body)
    assert forged.status_code == 403 and forged.json["code"] == "CSRF_FAILED"
    created = browser.post("/api/notebooks", json=body, headers={"X-CSRF-Token": signed_in.json["csrf_token"]})
    assert created.status_code == 201
    out = browser.delete("/api/session", headers={"X-CSRF-Token": signed_in.json["csrf_token"]})
    assert out.status_code == 204
    assert browser.get("/api/notebooks").status_code == 401


def test_token_sign_in_and_sign_out_revokes_only_the_session(world) -> None:
    browser = world.app.test_client()
    signed_in = browser.post("/api/session", json={"token": world.tokens["alice"]})
    assert signed_in.status_code == 200
    browser.delete("/api/session", headers={"X-CSRF-Token": signed_in.json["csrf_token"]})
    assert browser.get("/api/session").status_code == 401
    assert world.call("GET", "/api/notebooks").status_code == 200


def test_security_headers(world) -> None:
    response = world.call("GET", "/api/notebooks")
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"


def test_refreshes_are_rate_limited_with_retry_after(world) -> None:
    world.app.extensions["gnosi"].limiter.per_minute["refresh"] = 2
    notebook_id = create_notebook(world, ["dmca"], visibility="workspace")
    statuses = [world.call("POST", f"/api/notebooks/{notebook_id}/refresh").status_code for _ in range(3)]
    assert statuses[:2] == [202, 202]
    limited = world.call("POST", f"/api/notebooks/{notebook_id}/refresh")
    assert limited.status_code == 429 and limited.json["code"] == "RATE_LIMITED"
    assert 1 <= int(limited.headers["Retry-After"]) <= 60
    assert world.call("POST", f"/api/notebooks/{notebook_id}/refresh", who="bob").status_code == 403
