"""The Flask application factory: one place builds config, storage, Celery and blueprints."""
from __future__ import annotations

from flask import Flask

from app.config import Settings
from app.errors import register_error_handlers
from app.extensions import Services
from tasks.celery_app import celery_init_app


def create_app(settings: Settings | None = None) -> Flask:
    settings = settings or Settings.from_env()
    app = Flask(__name__, static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = settings.max_request_bytes
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.extensions["gnosi"] = Services(settings)
    celery_init_app(app, settings)
    register_error_handlers(app)

    from app.api import register_blueprints

    register_blueprints(app)
    return app
