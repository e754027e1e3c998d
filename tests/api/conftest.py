"""In-process API tests: the real Flask app on a real migrated SQLite database.

Messages go to the embedded broker file and no worker consumes them here; the ingestion path
itself is covered by tests/integration with real worker processes.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from app.config import Settings
from storage import accounts
from storage.db import Database
from storage.migrate import upgrade
from support.services import service_env
from support.vault import VaultBuilder


@dataclass
class ApiWorld:
    app: Flask
    client: FlaskClient
    vault: VaultBuilder
    tokens: dict[str, str]

    def headers(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def call(self, method: str, path: str, who: str = "alice", **kwargs):  # type: ignore[no-untyped-def]
        return self.client.open(path, method=method, headers=self.headers(who), **kwargs)


@pytest.fixture
def world(tmp_path: Path) -> ApiWorld:
    vault = VaultBuilder(tmp_path / "vault")
    vault.pdf_record("dmca", "dmca.pdf", title="Digital Millennium Copyright Act")
    vault.pdf_record("naacl", "naacl06-shinyama.pdf", title="Élan in paraphrase")
    vault.record("web", "A web page", link="https://example.org/page")
    vault.record("private-url", "Intranet", link="http://10.0.0.1/x")
    vault.record("escape", "Escape", file="../../etc/passwd")
    vault.record("tmpl", "Template", template=True, file=vault.attach_corpus("pdf/dmca.pdf"))
    settings = Settings.from_env(service_env(tmp_path / "local-data", vault.root, vault.table_id))
    settings.ensure_dirs()
    upgrade(settings.database_path)
    tokens = {}
    with Database(settings.database_path).session() as session:
        for name, workspace, role in (
            ("alice", "lab", "editor"), ("bob", "lab", "editor"), ("vic", "lab", "viewer"),
            ("eve", "other", "editor"),
        ):
            tokens[name] = accounts.add_user(session, settings.vault_hash, name, workspace, role)[1]
    app = create_app(settings)
    return ApiWorld(app, app.test_client(), vault, tokens)
