"""Who sees and manages analyses, and what a result shows once its evidence left the notebook."""
from __future__ import annotations

from pipeline.analysis.batches import BatchBounds
from support.analysis_runs import run_analysis
from support_api import index, services_of

BOUNDS = BatchBounds(max_items=10, max_chars=12_000)


def _notebook(world, mode: str) -> str:  # type: ignore[no-untyped-def]
    response = world.call("POST", "/api/notebooks", json={
        "title": "Shared", "visibility": "workspace", "conversation_mode": mode, "resource_ids": ["dmca"],
    })
    assert response.status_code == 201, response.json
    index(world, response.json["id"])
    return response.json["id"]


def _start(world, notebook_id: str, who: str = "alice") -> str:  # type: ignore[no-untyped-def]
    response = world.call("POST", f"/api/notebooks/{notebook_id}/analyses", who=who, json={"kind": "summary"})
    assert response.status_code == 202, response.json
    return response.json["id"]


def test_in_private_conversation_mode_members_see_their_own_analyses(world) -> None:  # type: ignore[no-untyped-def]
    notebook_id = _notebook(world, "private")
    alices, bobs = _start(world, notebook_id), _start(world, notebook_id, who="bob")
    base = f"/api/notebooks/{notebook_id}/analyses"
    assert [a["id"] for a in world.call("GET", base, who="bob").json["items"]] == [bobs]
    assert world.call("GET", f"{base}/{alices}", who="bob").status_code == 404
    assert world.call("POST", f"{base}/{alices}/cancel", who="bob").json["code"] == "ANALYSIS_NOT_FOUND"
    owner_sees = {a["id"] for a in world.call("GET", base).json["items"]}
    assert owner_sees == {alices, bobs}, "the notebook's owner sees every member's"


def test_a_viewer_reads_shared_analyses_but_cannot_cancel_or_delete_them(world) -> None:  # type: ignore[no-untyped-def]
    notebook_id = _notebook(world, "shared")
    analysis_id = _start(world, notebook_id)
    base = f"/api/notebooks/{notebook_id}/analyses/{analysis_id}"
    assert world.call("GET", base, who="vic").status_code == 200
    assert world.call("POST", f"{base}/cancel", who="vic").json["code"] == "READ_ONLY"
    assert world.call("DELETE", base, who="vic").json["code"] == "READ_ONLY"


def test_the_api_says_who_may_start_and_manage_each_analysis(world) -> None:  # type: ignore[no-untyped-def]
    """What a client shows follows the server's rules: editors start; who started one, or the
    notebook's creator, cancels or deletes it; a viewer does neither."""
    notebook_id = _notebook(world, "shared")
    alices, bobs = _start(world, notebook_id), _start(world, notebook_id, who="bob")
    base = f"/api/notebooks/{notebook_id}/analyses"

    def seen(who: str) -> tuple[bool, dict[str, bool]]:
        listed = world.call("GET", base, who=who).json
        return listed["can_start"], {a["id"]: a["can_manage"] for a in listed["items"]}

    assert seen("alice") == (True, {alices: True, bobs: True})  # the notebook's creator
    assert seen("bob") == (True, {alices: False, bobs: True})
    assert seen("vic") == (False, {alices: False, bobs: False})
    assert world.call("GET", f"{base}/{alices}", who="bob").json["can_manage"] is False
    assert world.call("POST", f"{base}/{alices}/cancel", who="bob").json["code"] == "NOT_ANALYSIS_OWNER"


def test_a_result_stays_readable_after_its_resource_is_removed_and_cites_nothing_then(world) -> None:  # type: ignore[no-untyped-def]
    notebook_id = _notebook(world, "shared")
    analysis_id = _start(world, notebook_id)
    run_analysis(services_of(world).db, notebook_id, analysis_id, BOUNDS)
    base = f"/api/notebooks/{notebook_id}/analyses/{analysis_id}"
    before = world.call("GET", base).json["result"]["points"]
    assert before and all(not p["removed"] and p["citations"] for p in before)
    cite = before[0]["citations"][0]["cite"]
    assert world.call("GET", f"/api/citations/resolve?link={cite}").status_code == 200
    assert world.call("DELETE", f"/api/notebooks/{notebook_id}/sources/dmca").status_code == 204
    after = world.call("GET", base).json["result"]["points"]
    assert [p["text"] for p in after] == [p["text"] for p in before]
    assert all(p["removed"] and p["citations"] == [] for p in after)
