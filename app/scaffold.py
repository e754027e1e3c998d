"""First run on an empty vault: lay out a References table so the dashboard has somewhere to start.

The table's identity is random and remembered under LOCAL_DATA, so the References table is still
chosen by identity (never by its folder name) even when GNOSI_REFERENCES_TABLE is not set.
"""
from __future__ import annotations

import uuid

import yaml

from app.config import Settings

SCHEMA_FIELDS = {
    "title": "text",
    "file": "attachment",
    "link": "url",
    "authors": "author",
    "tags": "tags",
    "kind": "type",
    "year": "text",
}
# The template's evidence fields are empty: a copy that keeps a placeholder must not become a real
# source (an example URL would be fetched), and a copy left unfilled is shown as "No attachment or
# URL" rather than indexed. A copy that keeps ``template: true`` is listed as a template, with why.
TEMPLATE = """---
template: true
title: ""
file: ""
link: ""
authors: []
tags: []
kind: paper
---
To add a record, copy this file, delete the line `template: true` (a template is never offered
as a source), and fill in `file` with a path inside the vault (for example
files/your-document.pdf) or `link` with a public http(s) URL (for example
https://example.org/an-article). Only those two are evidence; the title, authors, tags and this
body are for finding the record.
"""


def scaffold_vault(settings: Settings) -> str | None:
    """Create the References table in an empty vault; returns its id (None if the vault had files)."""
    vault = settings.vault_path
    vault.mkdir(parents=True, exist_ok=True)
    if any(vault.iterdir()):
        return None
    table_id = str(uuid.uuid4())
    folder = vault / "References"
    folder.mkdir()
    (vault / "files").mkdir()
    (folder / "_table.yaml").write_text(
        yaml.safe_dump({"id": table_id, "name": "References", "fields": SCHEMA_FIELDS}, sort_keys=False)
    )
    (folder / "_template.md").write_text(TEMPLATE)
    settings.remembered_table_path.write_text(table_id)
    return table_id
