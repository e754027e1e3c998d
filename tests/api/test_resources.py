"""GET /api/notebooks/resources: the selector says why records are left out, and, for a notebook
the caller may see, which resources it already holds (the "add sources" dialog)."""
from __future__ import annotations

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
