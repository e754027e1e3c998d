"""/api/chat/ws: the same turns as POST /api/chat, over a websocket (used by the dashboard).

Protocol: the client may authenticate with the Authorization header or a first message
``{"type": "auth", "token": ...}``; each ``{"type": "turn", ...chat body}`` is answered by
``{"event": <token|tool|citation|done|error>, "data": {...}}`` messages. Closing the socket stops
the turn in progress.
"""
from __future__ import annotations

import json
from urllib.parse import urlsplit

from flask import Flask, g, request, session
from flask_sock import ConnectionClosed, Sock

from app.api.chat import start_turn
from app.auth import current_principal, principal_from_token
from app.errors import ApiError
from app.extensions import services


def _cross_site_cookie_handshake() -> bool:
    """A browser always sends Origin on a websocket handshake; with cookie auth, another site's
    page could otherwise open a socket in the user's name (cross-site websocket hijacking).
    Hosts are compared without ports: cookies are not isolated by port either."""
    origin = request.headers.get("Origin")
    uses_cookie = not request.headers.get("Authorization")
    return bool(uses_cookie and origin and urlsplit(origin).hostname != request.host.rsplit(":", 1)[0].strip("[]"))


def register_websocket(app: Flask) -> None:
    sock = Sock(app)

    @sock.route("/api/chat/ws")
    def chat_ws(ws) -> None:  # type: ignore[no-untyped-def]
        if _cross_site_cookie_handshake():
            session.clear()
        def send(event: str, data: dict) -> None:
            ws.send(json.dumps({"event": event, "data": data}, ensure_ascii=False))

        try:
            while True:
                try:
                    message = json.loads(ws.receive())
                    if not isinstance(message, dict):
                        raise ApiError(400, "MALFORMED_JSON", "Send JSON objects.")
                    if message.get("type") == "auth":
                        g.principal = principal_from_token(str(message.get("token", "")))
                        send("auth", {"ok": True})
                        continue
                    if message.get("type") != "turn":
                        raise ApiError(400, "UNKNOWN_MESSAGE", "Send {'type': 'turn', ...} or {'type': 'auth', ...}.")
                    principal = current_principal()
                    body = {k: v for k, v in message.items() if k != "type"}
                    for event, data in start_turn(services(), principal, body, should_stop=lambda: not ws.connected):
                        send(event, data)
                except ApiError as err:
                    send("error", {"code": err.code, "message": err.message, **err.extra})
                except json.JSONDecodeError:
                    send("error", {"code": "MALFORMED_JSON", "message": "Send JSON objects."})
        except ConnectionClosed:
            return
