"""The analyses routes in the API tour: start, list, read (run to its end in this process, so its
result's shape is checked too), cancel, delete; and the errors a caller can cause."""
from __future__ import annotations

from typing import Any

from pipeline.analysis.batches import BatchBounds
from support.analysis_runs import run_analysis


def analyses_tour(world: Any, contract: Any, notebook_id: str) -> None:
    call, check = world.call, contract.check
    base = f"/api/notebooks/{notebook_id}/analyses"
    started = check(call("POST", base, json={"kind": "briefing", "instruction": "notice and takedown"}), 202).json
    run_analysis(world.app.extensions["gnosi"].db, notebook_id, started["id"], BatchBounds(max_items=10, max_chars=12_000))
    assert check(call("GET", base), 200).json["total"] == 1
    done = check(call("GET", f"{base}/{started['id']}"), 200).json
    assert done["state"] == "succeeded" and done["result"]["points"], done
    assert all(point["citations"][0]["cite"].startswith("gnosi-cite://") for point in done["result"]["points"])
    queued = check(call("POST", base, json={}), 202).json
    assert check(call("POST", f"{base}/{queued['id']}/cancel"), 200).json["state"] == "cancelled"
    check(call("DELETE", f"{base}/{queued['id']}"), 204)
    check(call("GET", f"{base}/{queued['id']}"), 404, "ANALYSIS_NOT_FOUND")


def analyses_errors(world: Any, contract: Any, notebook_id: str) -> None:
    """Bad input, other people's notebooks and analyses, viewers: each its documented code."""
    call, check = world.call, contract.check
    base = f"/api/notebooks/{notebook_id}/analyses"
    check(call("POST", base, json={"kind": "poem"}), 400, "FIELD_INVALID")
    check(call("POST", base, json={"depth": 3}), 400, "FIELD_UNKNOWN")
    check(call("POST", base, json={"instruction": "x" * 2001}), 400, "FIELD_TOO_LONG")
    check(call("POST", base, json={"source_ids": ["not-a-source"]}), 400, "SOURCE_NOT_ALLOWED")
    check(call("POST", base, who="vic", json={}), 403, "READ_ONLY")
    check(call("POST", base, who="eve", json={}), 404, "NOTEBOOK_NOT_FOUND")
    mine = check(call("POST", base, json={}), 202).json["id"]
    check(call("GET", f"{base}/{mine}", who="vic"), 200)  # viewers read analyses
    check(call("POST", f"{base}/{mine}/cancel", who="bob"), 403, "NOT_ANALYSIS_OWNER")
    check(call("DELETE", f"{base}/{mine}", who="bob"), 403, "NOT_ANALYSIS_OWNER")
    check(call("GET", f"{base}/{mine}", who="eve"), 404, "NOTEBOOK_NOT_FOUND")
    check(call("POST", base, json={}), 202)
    check(call("POST", base, json={}), 202)
    check(call("POST", base, json={}), 409, "TOO_MANY_ANALYSES")
