"""/api/chat/ws: the same turns as POST /api/chat, over a websocket (used by the dashboard).

Protocol: the client authenticates with the Authorization header or the session cookie at the
handshake, or with a message ``{"type": "auth", "token": ...}``; each ``{"type": "turn", ...chat
body}`` is answered by ``{"event": <token|tool|citation|done|error>, "data": {...}}`` messages.
Closing the socket stops the turn in progress. A message that cannot be used (not JSON, nested too
deep, a lone surrogate, an unknown type) gets an ``error`` event and the socket stays open.

Credentials are resolved again for every message, so a revoked token, a sign-out or a lowered role
applies at the socket's next turn (an ``error`` event such as ``AUTH_INVALID``).

Sockets are bounded so that they can never starve HTTP. The server closes one with:

- 1008 "authentication deadline": no valid credentials ``GNOSI_WS_AUTH_SECONDS`` after the handshake,
  or after a message whose credentials stopped working (a revoked token, a sign-out);
- 4408 "idle": no message from the client for ``GNOSI_WS_IDLE_SECONDS`` (a turn in progress is
  not idle: the clock restarts when it ends);
- 4429: the user already has ``GNOSI_WS_SOCKETS_PER_USER`` sockets open;
- 1013 (try again later): ``GNOSI_WS_MAX_SOCKETS`` sockets are open on this server;
- 1009: a message larger than the request body limit (1 MB).

The caps hold across every web process of the host (app/api/ws_slots.py).
"""
from __future__ import annotations

import json
import logging
import time
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, current_app, request, session
from flask_sock import ConnectionClosed, Sock

from app.api.chat import start_turn
from app.api.ws_slots import Slot, SocketRefused, SocketSlots
from app.auth import current_principal, principal_from_token
from app.config import Settings
from app.errors import ApiError
from app.extensions import services
from app.metrics import SOCKETS_OPEN
from app.http import parse_json_object
from storage.scope import Principal

log = logging.getLogger(__name__)

AUTH_DEADLINE = (1008, "Authentication deadline passed: send credentials at the handshake or an 'auth' message.")
IDLE = (4408, "Idle timeout: no message from the client.")


def _cross_site_cookie_handshake() -> bool:
    """A browser always sends Origin on a websocket handshake; with cookie auth, another site's
    page could otherwise open a socket in the user's name (cross-site websocket hijacking).
    Hosts are compared without ports: cookies are not isolated by port either."""
    origin = request.headers.get("Origin")
    uses_cookie = not request.headers.get("Authorization")
    return bool(uses_cookie and origin and urlsplit(origin).hostname != request.host.rsplit(":", 1)[0].strip("[]"))


class ChatSocket:
    """One socket's life: signed in before the deadline, then turns until idle or closed."""

    def __init__(self, ws: Any, settings: Settings, slots: SocketSlots, slot: Slot) -> None:
        self.ws = ws
        self.settings = settings
        self.slots = slots
        self.slot = slot
        self.token: str | None = None  # from an 'auth' message; None: the handshake's credentials
        self.signed_in = False
        self.auth_deadline = time.monotonic() + settings.ws_auth_seconds

    def send(self, event: str, data: dict[str, Any]) -> None:
        self.ws.send(json.dumps({"event": event, "data": data}, ensure_ascii=False))

    def principal(self) -> Principal:
        """Resolved afresh from the credentials for every message (each runs in its own app
        context, so nothing an earlier message cached on ``g`` is reused). Credentials that stopped
        working (a revoked token, a sign-out) leave the socket the authentication deadline to
        sign in again."""
        try:
            return principal_from_token(self.token) if self.token is not None else current_principal()
        except ApiError as err:
            if err.status == 401 and self.signed_in:
                self.signed_in = False
                self.auth_deadline = time.monotonic() + self.settings.ws_auth_seconds
            raise

    def sign_in(self, principal: Principal) -> None:
        self.slots.bind_user(self.slot, principal.user_id)
        self.signed_in = True

    def serve(self) -> None:
        try:
            with current_app.app_context():
                self.sign_in(self.principal())
        except ApiError:
            pass  # no usable credentials yet: an 'auth' message may bring them before the deadline
        while True:
            signed_in = self.signed_in
            raw = self.receive(time.monotonic() + self.settings.ws_idle_seconds if signed_in else self.auth_deadline)
            if raw is None:
                self.ws.close(*(IDLE if signed_in else AUTH_DEADLINE))
                return
            with current_app.app_context():
                self.handle(raw)

    def receive(self, deadline: float) -> str | bytes | None:
        """The next message, or None at the deadline; raises ConnectionClosed when the client left."""
        while (remaining := deadline - time.monotonic()) > 0:
            raw = self.ws.receive(timeout=remaining)
            if raw is not None:
                return raw
        return None

    def handle(self, raw: str | bytes) -> None:
        try:
            message = parse_json_object(raw)
            kind = message.get("type")
            if kind == "auth":
                token = str(message.get("token", ""))
                principal = principal_from_token(token)
                self.sign_in(principal)
                self.token = token
                self.send("auth", {"ok": True})
            elif kind == "turn":
                principal = self.principal()
                body = {k: v for k, v in message.items() if k != "type"}
                for event, data in start_turn(services(), principal, body, should_stop=lambda: not self.ws.connected):
                    self.send(event, data)
            else:
                raise ApiError(400, "UNKNOWN_MESSAGE", "Send {'type': 'turn', ...} or {'type': 'auth', ...}.")
        except ApiError as err:
            self.send("error", {"code": err.code, "message": err.message, **err.extra})
        except (ConnectionClosed, SocketRefused):
            raise
        except Exception:  # one failed message must not take the connection down with it
            log.exception("chat websocket message failed")
            self.send("error", {"code": "INTERNAL_ERROR", "message": "The server failed to handle this message."})


def register_websocket(app: Flask) -> None:
    settings: Settings = app.extensions["gnosi"].settings
    app.config["SOCK_SERVER_OPTIONS"] = {"max_message_size": settings.max_request_bytes}
    slots = app.extensions["gnosi"].socket_slots
    sock = Sock(app)

    @sock.route("/api/chat/ws")
    def chat_ws(ws) -> None:  # type: ignore[no-untyped-def]
        if _cross_site_cookie_handshake():
            session.clear()
        try:
            with slots.slot() as slot, SOCKETS_OPEN.track_inprogress():
                ChatSocket(ws, settings, slots, slot).serve()
        except SocketRefused as refused:
            ws.close(refused.code, refused.reason)
