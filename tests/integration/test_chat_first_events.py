"""A turn that is computing lets the turns waiting for the CPU start and send their first event
(app.cooperative).

One gevent web process runs every turn on one thread: without yielding after each event, a turn
kept the CPU from its first event to its last, and questions asked meanwhile were not even read
until then, so turns asked together ran one after another, each whole (ten clients at once on a
100k-chunk notebook: 576 ms to the first event, against 24 alone). Asserted by the order in which
the events arrive, never by how long they took.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.live import Deployment, deployment
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Deployment, str]]:
    tmp: Path = tmp_path_factory.mktemp("first-events")
    vault = VaultBuilder(tmp / "vault")
    for resource_id, pdf in (("dmca", "dmca.pdf"), ("trace", "tracemonkey.pdf")):
        vault.pdf_record(resource_id, pdf)
    with deployment(tmp, vault.root, vault.table_id, redis=False, GNOSI_WEB_PROCESSES="1",
                    GNOSI_CHAT_TURNS_PER_MINUTE="1000") as d:
        d.start_web()
        notebook_id = d.api.create(["dmca", "trace"])
        assert d.api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
        yield d, notebook_id


QUESTIONS = (
    "How does TraceMonkey record and compile traces of hot loops?",
    "What does the DMCA say about circumventing access controls?",
    "What is type specialization of JavaScript values?",
    "Which online service providers are protected by the safe harbor?",
)


def _turns_at_once(d: Deployment, notebook_id: str) -> list[tuple[int, str]]:
    """Every client's events in the order they arrived, the clients sending together from
    connections already open."""
    arrived: list[tuple[int, str]] = []
    lock, together = threading.Lock(), threading.Barrier(len(QUESTIONS))

    def client(who: int, http: httpx.Client) -> None:
        together.wait(30)
        with http.stream("POST", "/api/chat", json={"notebook_id": notebook_id, "message": QUESTIONS[who]}) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith("event: "):
                    with lock:
                        arrived.append((who, line[len("event: "):]))

    clients = [httpx.Client(base_url=d.api.http.base_url, headers=d.api.http.headers, timeout=120) for _ in QUESTIONS]
    try:
        for http in clients:
            assert http.get(f"/api/notebooks/{notebook_id}").status_code == 200  # the connection is open before the turns
        threads = [threading.Thread(target=client, args=(who, http)) for who, http in enumerate(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        for http in clients:
            http.close()
    return arrived


def _interleaved(arrived: list[tuple[int, str]]) -> bool:
    """Whether some turn's first event arrived while another turn, begun before it, was not done."""
    first = {who: arrived.index((who, event)) for who, event in reversed(arrived)}
    done = {who: arrived.index((who, "done")) for who in first}
    return any(first[a] < first[b] < done[a] for a in first for b in first if a != b)


def test_turns_asked_together_interleave_instead_of_waiting_for_each_other(world) -> None:  # type: ignore[no-untyped-def]
    d, notebook_id = world
    rounds = [_turns_at_once(d, notebook_id) for _ in range(3)]
    for arrived in rounds:
        assert sorted({(who, event) for who, event in arrived if event == "done"}) == [(w, "done") for w in range(len(QUESTIONS))], arrived
    assert any(_interleaved(arrived) for arrived in rounds), rounds
