"""A person signed in to the dashboard, as a test calls the API: a browser's cookie session with
its CSRF header, for what an API token may not do (approving an agent's write)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask


def signed_in(app: Flask, token: str) -> Callable[..., Any]:
    """``call(method, path, **kwargs)`` as the token's user, signed in with it."""
    browser = app.test_client()
    session = browser.post("/api/session", json={"token": token})
    assert session.status_code == 200, session.get_json()
    headers = {"X-CSRF-Token": session.get_json()["csrf_token"]}

    def call(method: str, path: str, **kwargs: Any) -> Any:
        return browser.open(path, method=method, headers=headers, **kwargs)

    return call
