"""Letting requests that wait for the CPU start before a turn goes on computing.

`gnosi serve` runs each web process as gevent greenlets on one thread (serving/). A greenlet keeps
the CPU until it waits on I/O, and a chat turn hardly waits: once the first event of one turn is
sent (a socket write that does not block), its search, answer and storing run on, and a request
that arrived meanwhile starts only when they are done. Ten turns at once then wait for each other
before any of them shows its first event. After each event is sent the turn yields until the
event loop has nothing else to do, so the requests waiting to be read and started run first
(issue #13: the first event within 50 ms). A search yields the same way between its phases
(``storage.retrieval.Retriever``'s ``between_phases``): a request that arrives while turns search
then waits for a third of a search in each of them, not for whole searches.

Outside gevent (tests, a threaded server) this does nothing: threads are preempted anyway.
"""
from __future__ import annotations

import sys


# The longest a turn waits for the others: a greenlet that kept yielding with ``sleep(0)`` would
# otherwise keep the loop from ever being idle.
LONGEST_WAIT_SECONDS = 0.05


def let_waiting_requests_run() -> None:
    """Yield to every greenlet and I/O callback that is ready, when running under gevent."""
    if "gevent" not in sys.modules:
        return
    from gevent import Timeout, idle, monkey

    if monkey.is_module_patched("socket"):
        with Timeout(LONGEST_WAIT_SECONDS, False):
            idle()
