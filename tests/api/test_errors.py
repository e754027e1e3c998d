"""Every error a client can cause is a JSON {code, message} with the right status, and changes nothing."""
from __future__ import annotations

import pytest

from support_api import create_notebook


def test_auth_is_required(world) -> None:
    response = world.client.get("/api/notebooks")
    assert response.status_code == 401 and response.json["code"] == "AUTH_REQUIRED"
    response = world.client.get("/api/notebooks", headers={"Authorization": "Bearer nope"})
    assert response.status_code == 401 and response.json["code"] == "AUTH_INVALID"


@pytest.mark.parametrize(
    ("body", "kwargs", "status", "code"),
    [
        (None, {"data": "{not json", "content_type": "application/json"}, 400, "MALFORMED_JSON"),
        (None, {"data": "[1, 2]", "content_type": "application/json"}, 400, "MALFORMED_JSON"),
        (None, {"data": "title=x", "content_type": "application/x-www-form-urlencoded"}, 415, "JSON_REQUIRED"),
        ({"resource_ids": ["dmca"]}, {}, 400, "FIELD_REQUIRED"),
        ({"title": "t", "resource_ids": "dmca"}, {}, 400, "FIELD_INVALID"),
        ({"title": "t", "visibility": "public", "resource_ids": ["dmca"]}, {}, 400, "FIELD_INVALID"),
        ({"title": "t", "resource_ids": ["nope"]}, {}, 404, "RESOURCE_NOT_FOUND"),
        ({"title": "t", "resource_ids": ["tmpl"]}, {}, 422, "RESOURCE_IS_TEMPLATE"),
        ({"title": "t", "resource_ids": ["escape"]}, {}, 422, "RESOURCE_HAS_NO_SOURCES"),
        ({"title": "t", "resource_ids": ["private-url"]}, {}, 422, "RESOURCE_HAS_NO_SOURCES"),
        ({"title": "t", "resource_ids": [f"r{i}" for i in range(1001)]}, {}, 400, "TOO_MANY_RESOURCES"),
    ],
)
def test_bad_create_requests(world, body, kwargs, status, code) -> None:
    response = world.call("POST", "/api/notebooks", json=body, **kwargs) if body is not None else world.call(
        "POST", "/api/notebooks", **kwargs
    )
    assert response.status_code == status, response.json
    assert response.json["code"] == code and response.json["message"]
    assert world.call("GET", "/api/notebooks").json["total"] == 0


@pytest.mark.parametrize(
    ("query", "code"),
    [("page=0", "BAD_PAGINATION"), ("per_page=201", "PAGE_SIZE_TOO_LARGE"), ("page=x", "BAD_PAGINATION")],
)
def test_bad_pagination(world, query: str, code: str) -> None:
    for path in ("/api/notebooks", "/api/notebooks/resources"):
        response = world.call("GET", f"{path}?{query}")
        assert response.status_code == 400 and response.json["code"] == code


def test_unknown_ids_are_404_json(world) -> None:
    for method, path in [
        ("GET", "/api/notebooks/deadbeef"),
        ("PATCH", "/api/notebooks/deadbeef"),
        ("DELETE", "/api/notebooks/deadbeef"),
        ("GET", "/api/notebooks/deadbeef/sources"),
        ("POST", "/api/notebooks/deadbeef/refresh"),
        ("GET", "/api/notebooks/deadbeef/search?q=x"),
        ("GET", "/api/notebooks/deadbeef/evidence/ch_x?revision=r"),
    ]:
        kwargs = {"json": {"title": "x"}} if method == "PATCH" else {}
        response = world.call(method, path, **kwargs)
        assert response.status_code == 404, (method, path, response.json)
        assert response.json["code"] == "NOTEBOOK_NOT_FOUND"
    response = world.call("GET", "/api/nothing-here")
    assert response.status_code == 404 and response.json["code"] == "NOT_FOUND"


def test_search_and_evidence_validation(world) -> None:
    notebook_id = create_notebook(world, ["dmca"])
    assert world.call("GET", f"/api/notebooks/{notebook_id}/search").json["code"] == "QUERY_REQUIRED"
    assert world.call("GET", f"/api/notebooks/{notebook_id}/search?q=x&limit=51").json["code"] == "BAD_LIMIT"
    response = world.call("GET", f"/api/notebooks/{notebook_id}/search?q=x")
    assert response.status_code == 409 and response.json["code"] == "NO_ACTIVE_REVISION"
    response = world.call("GET", f"/api/notebooks/{notebook_id}/evidence/ch_x")
    assert response.status_code == 400 and response.json["code"] == "REVISION_REQUIRED"
    response = world.call("GET", f"/api/notebooks/{notebook_id}/evidence/ch_x?revision=nope")
    assert response.status_code == 404 and response.json["code"] == "REVISION_NOT_FOUND"


def test_body_size_limit(world) -> None:
    response = world.call("POST", "/api/notebooks", data="x" * 2_000_000, content_type="application/json")
    assert response.status_code == 413 and response.json["code"] == "REQUEST_ENTITY_TOO_LARGE"


def test_only_the_creator_manages(world) -> None:
    notebook_id = create_notebook(world, ["dmca"], visibility="workspace")
    for method, path, body in [
        ("PATCH", f"/api/notebooks/{notebook_id}", {"title": "mine now"}),
        ("DELETE", f"/api/notebooks/{notebook_id}", None),
        ("POST", f"/api/notebooks/{notebook_id}/sources", {"resource_ids": ["naacl"]}),
        ("DELETE", f"/api/notebooks/{notebook_id}/sources/dmca", None),
        ("POST", f"/api/notebooks/{notebook_id}/refresh", None),
    ]:
        response = world.call(method, path, who="bob", json=body)
        assert response.status_code == 403, (method, path)
        assert response.json["code"] == "NOT_NOTEBOOK_OWNER"
    assert world.call("GET", f"/api/notebooks/{notebook_id}", who="bob").status_code == 200
    assert world.call("GET", f"/api/notebooks/{notebook_id}", who="eve").status_code == 404


def test_private_notebooks_are_invisible_to_others(world) -> None:
    notebook_id = create_notebook(world, ["dmca"])
    for who in ("bob", "vic", "eve"):
        assert world.call("GET", f"/api/notebooks/{notebook_id}", who=who).status_code == 404
        assert world.call("GET", "/api/notebooks", who=who).json["total"] == 0


def test_viewer_cannot_create(world) -> None:
    response = world.call("POST", "/api/notebooks", who="vic", json={"title": "t", "resource_ids": ["dmca"]})
    assert response.status_code == 403 and response.json["code"] == "ROLE_FORBIDDEN"
