"""GET /api/openapi.json (the hand-maintained OpenAPI 3.1 document of every route) and /api/docs.

The document lives next to the routes in ``openapi.yaml`` and is read once per process. The docs
page renders it with Swagger UI, whose files come from the ``flask-swagger-ui`` package (we use
its files, not its blueprint: its page has an inline script, which our CSP refuses) and are
served from here, so the page needs no CDN and no exception to the CSP: its one script of our
own is ``web/static/js/api-docs.js``.
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import flask_swagger_ui
import yaml
from flask import Blueprint, current_app, render_template, request, send_from_directory
from werkzeug.wrappers import Response

from app.dashboard import WEB
from app.errors import ApiError

DOCUMENT = Path(__file__).with_name("openapi.yaml")
SWAGGER_UI = Path(flask_swagger_ui.__file__).resolve().parent / "dist"
# What the page loads (and the licence that comes with it); nothing else of the package is served.
ASSETS = {"swagger-ui.css": "text/css", "swagger-ui-bundle.js": "text/javascript", "LICENSE": "text/plain"}
DOCUMENT_MAX_AGE = 300
ASSET_MAX_AGE = 24 * 60 * 60

bp = Blueprint("openapi", __name__, template_folder=str(WEB / "templates"))


def load_document(path: Path = DOCUMENT) -> dict[str, Any]:
    """The OpenAPI document as a Python object (also what the tests validate)."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@functools.cache
def _serialised() -> tuple[bytes, str]:
    body = json.dumps(load_document(), ensure_ascii=False, separators=(",", ":")).encode()
    return body, hashlib.sha256(body).hexdigest()[:32]


@bp.get("/api/openapi.json")
def document() -> Response:
    """Public: the document holds no data, only the shape of the API."""
    body, etag = _serialised()
    response = current_app.response_class(body, mimetype="application/json")
    response.set_etag(etag)
    response.cache_control.public = True
    response.cache_control.max_age = DOCUMENT_MAX_AGE
    return response.make_conditional(request)


@bp.get("/api/docs")
def docs() -> str:
    return render_template("api_docs.html")


@bp.get("/api/docs/assets/<name>")
def asset(name: str) -> Response:
    if name not in ASSETS:
        raise ApiError(404, "ASSET_NOT_FOUND", "No such documentation asset.")
    return send_from_directory(SWAGGER_UI, name, mimetype=ASSETS[name], max_age=ASSET_MAX_AGE)
