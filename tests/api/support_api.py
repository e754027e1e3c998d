"""Helpers for the in-process API tests."""
from __future__ import annotations


def create_notebook(world, resource_ids: list[str], visibility: str = "private") -> str:  # type: ignore[no-untyped-def]
    response = world.call(
        "POST", "/api/notebooks",
        json={"title": "Notebook", "visibility": visibility, "resource_ids": resource_ids},
    )
    assert response.status_code == 201, response.json
    return response.json["id"]
