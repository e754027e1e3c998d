"""HTTP blueprints under /api."""
from __future__ import annotations

from flask import Flask


def register_blueprints(app: Flask) -> None:
    from app.api.analyses import bp as analyses_bp
    from app.api.chat import bp as chat_bp
    from app.api.chat_ws import register_websocket
    from app.api.citations import bp as citations_bp
    from app.api.drive import bp as drive_bp
    from app.api.health import bp as health_bp
    from app.api.internal import bp as internal_bp
    from app.api.knowledge import bp as knowledge_bp
    from app.api.knowledge_concepts import bp as knowledge_concepts_bp
    from app.api.knowledge_base import bp as knowledge_base_bp
    from app.api.linked_folders import bp as linked_folders_bp
    from app.api.notebooks import bp as notebooks_bp
    from app.api.openapi import bp as openapi_bp
    from app.api.resources import bp as resources_bp
    from app.api.search import bp as search_bp
    from app.api.session import bp as session_bp
    from app.api.sources import bp as sources_bp
    from app.api.tables import bp as tables_bp
    from app.dashboard import bp as dashboard_bp

    for blueprint in (
        session_bp, tables_bp, resources_bp, notebooks_bp, sources_bp, search_bp, chat_bp, analyses_bp, internal_bp,
        health_bp, citations_bp, openapi_bp, dashboard_bp, linked_folders_bp, knowledge_base_bp, drive_bp,
        knowledge_bp, knowledge_concepts_bp,
    ):
        app.register_blueprint(blueprint)
    register_websocket(app)
