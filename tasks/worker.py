"""Entry point for ``celery -A tasks.worker worker``: builds the app from the environment."""
from __future__ import annotations

from app import create_app

flask_app = create_app()
celery_app = flask_app.extensions["celery"]
