"""GET /api/notebooks/resources: the selector says why records are left out, and, for a notebook
the caller may see, which resources it already holds (the "add sources" dialog)."""
from __future__ import annotations

from dataclasses import replace

import yaml

from app.scaffold import SCHEMA_FIELDS
from support_api import create_notebook


def test_the_selector_counts_what_it_leaves_out_by_reason(world) -> None:
    listed = world.call("GET", "/api/notebooks/resources").json
    assert {item["resource_id"] for item in listed["items"]} == {"dmca", "naacl", "web"}
    assert {reason["code"]: reason["count"] for reason in listed["omitted_reasons"]} == {
        "TEMPLATE": 1, "URL_NOT_ALLOWED": 1, "PATH_NOT_ALLOWED": 1,
    }
    assert listed["omitted"] == 3
    private = next(reason for reason in listed["omitted_reasons"] if reason["code"] == "URL_NOT_ALLOWED")
    assert "GNOSI_URL_ALLOWLIST" in private["message"]


def test_members_of_a_notebook_are_marked_for_adding_sources(world) -> None:
    notebook_id = create_notebook(world, ["dmca"])
    listed = world.call("GET", f"/api/notebooks/resources?notebook_id={notebook_id}").json
    assert {item["resource_id"]: item["member"] for item in listed["items"]} == {"dmca": True, "naacl": False, "web": False}
    assert "member" not in world.call("GET", "/api/notebooks/resources").json["items"][0]


def test_another_users_notebook_cannot_be_probed_through_the_selector(world) -> None:
    notebook_id = create_notebook(world, ["dmca"])  # alice's, private
    response = world.call("GET", f"/api/notebooks/resources?notebook_id={notebook_id}", who="bob")
    assert response.status_code == 404 and response.json["code"] == "NOTEBOOK_NOT_FOUND"


def test_adding_sources_lists_the_table_the_notebook_was_created_from(world) -> None:
    notebook_id = create_notebook(world, ["dmca"])
    reading = world.vault.root / "Reading"
    reading.mkdir()
    (reading / "_table.yaml").write_text(yaml.safe_dump({"id": "reading-table", "name": "Reading", "fields": SCHEMA_FIELDS}))
    (reading / "essay.md").write_text("---\nid: essay\ntitle: An essay\nlink: https://example.org/essay\n---\n")
    svc = world.app.extensions["gnosi"]
    assert world.call("GET", f"/api/notebooks/resources?notebook_id={notebook_id}").json["table_changed"] is False

    svc.settings = replace(svc.settings, references_table="reading-table")
    for_creating = world.call("GET", "/api/notebooks/resources").json
    assert [item["resource_id"] for item in for_creating["items"]] == ["essay"]
    assert (for_creating["table_id"], for_creating["table_changed"]) == ("reading-table", False)
    for_adding = world.call("GET", f"/api/notebooks/resources?notebook_id={notebook_id}").json
    assert {item["resource_id"] for item in for_adding["items"]} == {"dmca", "naacl", "web"}
    assert (for_adding["table_id"], for_adding["table_changed"]) == (world.vault.table_id, True)
    added = world.call("POST", f"/api/notebooks/{notebook_id}/sources", json={"resource_ids": ["naacl"]})
    assert added.status_code == 202 and added.json["added"] == ["naacl"]
