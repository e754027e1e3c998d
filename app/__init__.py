"""The Flask application factory: one place builds config, storage, Celery and blueprints."""
from __future__ import annotations

from flask import Flask

from app import logs
from app.config import Settings
from app.errors import register_error_handlers
from app.security import register_security_headers
from app.extensions import Services
from tasks.celery_app import celery_init_app


def create_app(settings: Settings | None = None) -> Flask:
    settings = settings or Settings.from_env()
    app = Flask(__name__, static_folder=None)
    app.config.update(
        MAX_CONTENT_LENGTH=settings.max_request_bytes,
        SECRET_KEY=settings.session_key(),
        SESSION_COOKIE_NAME="gnosi_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings.cookie_secure,
        PERMANENT_SESSION_LIFETIME=60 * 60 * 24 * 14,
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]
    logs.configure(settings)
    app.extensions["gnosi"] = Services(settings)
    celery_init_app(app, settings)
    register_error_handlers(app)
    register_security_headers(app)
    logs.register_request_ids(app)

    from app.api import register_blueprints

    register_blueprints(app)
    return app
