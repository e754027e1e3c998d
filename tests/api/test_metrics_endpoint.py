"""`GET /metrics` in one process (no multiprocess directory): Prometheus's parser reads it, a
refusal is counted by action, and a broker that does not answer is reported, not a 500."""
from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from support_api import create_notebook


def values(world) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:  # type: ignore[no-untyped-def]
    response = world.client.get("/metrics")
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.get_data(as_text=True))
        for sample in family.samples
    }


def test_refusals_are_counted_by_action(world) -> None:
    before = values(world).get(("gnosi_rate_limited_total", (("action", "refresh"),)), 0)
    world.app.extensions["gnosi"].limiter.per_minute["refresh"] = 1
    notebook_id = create_notebook(world, ["dmca"])
    statuses = [world.call("POST", f"/api/notebooks/{notebook_id}/refresh").status_code for _ in range(3)]
    assert statuses.count(429) == 2
    found = values(world)
    assert found[("gnosi_rate_limited_total", (("action", "refresh"),))] == before + 2
    assert found[("gnosi_jobs", (("state", "queued"),))] >= 1  # nothing consumes here


def test_a_broker_that_does_not_answer_is_reported(world) -> None:
    world.app.extensions["celery"].conf.broker_url = "redis://127.0.0.1:1/0"
    found = values(world)
    assert found[("gnosi_broker_up", ())] == 0
    assert not any(name == "gnosi_queue_messages" for name, _ in found)
    assert ("gnosi_jobs", (("state", "running"),)) in found
