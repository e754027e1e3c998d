"""The decoder helper's life: one helper serves request after request, and it is replaced after
a bomb or a timeout, when it kept memory, after its quota of requests and when it died while
idle; a forked child gets a helper of its own, and a helper dies with the process that started it.

Tasks are module-level functions (or partials of them): they reach the helper pickled by reference.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from pipeline.sandbox import DecoderProcess
from pipeline.types import PipelineError
from support.services import REPO

CAPS = {"memory_mb": 64, "timeout_seconds": 30}
NewDecoder = Callable[..., DecoderProcess]  # the new_decoder fixture (tests/unit/conftest.py)
_KEPT: list[bytes] = []  # in the helper: what a request leaves behind on purpose


def _keep(mib: int) -> int:
    _KEPT.append(b"\x01" * (mib << 20))
    return os.getpid()


def _allocate(mib: int) -> int:
    return len(b"\x01" * (mib << 20))


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _pids(helper: DecoderProcess, count: int) -> list[int]:
    return [helper.run(os.getpid, **CAPS) for _ in range(count)]


def _state(pid: int) -> str | None:
    """A process's state letter (Z for a zombie), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def _wait_until_dead(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _state(pid) in (None, "Z"):
            return True
        time.sleep(0.05)
    return False


def test_one_helper_serves_request_after_request(new_decoder: NewDecoder) -> None:
    helper = new_decoder()
    pids = _pids(helper, 5)
    assert len(set(pids)) == 1 and pids[0] != os.getpid() and pids[0] == helper.pid
    assert helper.run(os.getppid, **CAPS) == os.getpid()


def test_a_bomb_or_a_timeout_replaces_the_helper(new_decoder: NewDecoder) -> None:
    helper = new_decoder()
    first = helper.run(os.getpid, **CAPS)
    with pytest.raises(PipelineError, match="EXTRACT_MEMORY_LIMIT"):
        helper.run(partial(_allocate, 128), **CAPS)
    second = helper.run(os.getpid, **CAPS)
    with pytest.raises(PipelineError, match="EXTRACT_TIMEOUT"):
        helper.run(partial(_pid_after, 60), memory_mb=64, timeout_seconds=1)
    third = helper.run(os.getpid, **CAPS)
    assert len({first, second, third}) == 3
    assert _state(first) is None and _state(second) is None  # killed and reaped


def test_a_helper_that_kept_memory_is_replaced_and_one_that_kept_little_is_not(new_decoder: NewDecoder) -> None:
    helper = new_decoder(restart_share=1 / 8)  # of 64 MiB: 8 MiB
    first = helper.run(partial(_keep, 1), **CAPS)  # from free heap the helper may have inherited
    assert helper.run(partial(_keep, 24), **CAPS) == first  # a block that large is mapped on its own
    assert helper.run(os.getpid, **CAPS) != first  # replaced after the reply that kept 24 MiB


_FREED_HEAP_AT_FORK = """
import ctypes, os, sys
from functools import partial
from pipeline.sandbox import DecoderProcess

KEPT = []

def keep(mib):
    KEPT.append(b"\\x01" * (mib << 20))
    return os.getpid()

ctypes.CDLL(None).mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD, as glibc raises it itself after a large free
blocks = [bytearray(100_000) for _ in range(400)]
del blocks  # 40 MB free at the top of the heap, kept
helper = DecoderProcess(restart_share=1 / 8)
caps = {"memory_mb": 64, "timeout_seconds": 30}
first = helper.run(partial(keep, 1), **caps)
assert helper.run(partial(keep, 24), **caps) == first
print("replaced" if helper.run(os.getpid, **caps) != first else "kept")
helper.close()
"""


def test_memory_kept_is_counted_from_the_helper_after_it_gave_back_the_free_heap_it_inherited() -> None:
    """A worker's heap may hold tens of MiB freed but not given back; the helper gives them back
    at its start, so what it keeps later is counted from there, not from the worker's size."""
    done = subprocess.run([sys.executable, "-c", _FREED_HEAP_AT_FORK], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "replaced"


def test_memory_an_earlier_request_kept_does_not_eat_the_next_budget(new_decoder: NewDecoder) -> None:
    helper = new_decoder(restart_share=1.0)  # keep the helper however much it holds
    first = helper.run(partial(_keep, 40), **CAPS)
    assert helper.run(partial(_allocate, 48), **CAPS) == 48 << 20  # 40 + 48 MiB > the 64 MiB budget
    assert helper.pid == first


def test_a_helper_is_replaced_after_its_quota_of_requests(new_decoder: NewDecoder) -> None:
    pids = _pids(new_decoder(max_requests=3), 7)
    assert pids[0:3] == [pids[0]] * 3 and pids[3:6] == [pids[3]] * 3 and len({pids[0], pids[3], pids[6]}) == 3


def test_threads_of_one_worker_take_turns_on_its_helper(new_decoder: NewDecoder) -> None:
    helper = new_decoder()
    first = helper.run(os.getpid, **CAPS)  # started by this thread, which outlives the two below
    pids: list[int] = []
    threads = [threading.Thread(target=lambda: pids.append(helper.run(partial(_pid_after, 0.3), **CAPS)))
               for _ in range(2)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert pids == [first, first]
    assert time.monotonic() - started >= 0.6


def test_a_helper_that_died_while_idle_is_replaced(new_decoder: NewDecoder) -> None:
    """The parent-death signal follows the thread that started the helper: when that thread
    ends, the helper dies, and the next request must not be blamed for it."""
    helper = new_decoder()
    started: list[int] = []
    thread = threading.Thread(target=lambda: started.append(helper.run(os.getpid, **CAPS)))
    thread.start()
    thread.join()
    assert _wait_until_dead(started[0])
    assert helper.run(os.getpid, **CAPS) not in (started[0], os.getpid())


def test_a_request_in_flight_when_the_helpers_thread_ends_is_tried_again(new_decoder: NewDecoder) -> None:
    """Not blamed on the document: its helper was killed because another thread ended."""
    helper = new_decoder()
    started: list[int] = []
    release = threading.Event()

    def start_then_wait() -> None:
        started.append(helper.run(os.getpid, **CAPS))
        release.wait()

    thread = threading.Thread(target=start_then_wait)
    thread.start()
    while not started:
        time.sleep(0.01)
    threading.Timer(0.3, release.set).start()  # the starting thread ends while the request below runs
    assert helper.run(partial(_pid_after, 1), **CAPS) not in (started[0], os.getpid())
    thread.join()


def test_a_forked_child_gets_a_helper_of_its_own(new_decoder: NewDecoder) -> None:
    helper = new_decoder()
    ours = helper.run(os.getpid, **CAPS)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the child: report its helper and its helper's parent, never return into pytest
        try:
            os.close(read_end)
            report = f"{helper.run(os.getpid, **CAPS)} {helper.run(os.getppid, **CAPS)}"
            os.write(write_end, report.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        theirs, their_parent = (int(pid) for pid in pipe.read().split())
    os.waitpid(child, 0)
    assert theirs != ours and their_parent == child
    assert helper.run(os.getpid, **CAPS) == ours  # the child left the parent's helper alone
    assert _wait_until_dead(theirs)  # and its own helper died with it


def test_the_helper_dies_with_its_worker() -> None:
    """Even in the middle of a request, when it reads no pipe that could tell it."""
    script = (
        "import os, time\n"
        "from pipeline.sandbox import decoder\n"
        "def report_and_sleep():\n"
        "    print(os.getpid(), flush=True)\n"
        "    time.sleep(60)\n"
        "decoder().run(report_and_sleep, memory_mb=64, timeout_seconds=120)\n"
    )
    worker = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout is not None
        helper = int(worker.stdout.readline())
        assert _state(helper) not in (None, "Z")
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
        assert _wait_until_dead(helper)
    finally:
        worker.kill()
        worker.wait()


def test_the_helper_keeps_none_of_the_workers_files_open(new_decoder: NewDecoder) -> None:
    """A pipe the worker closes reaches end-of-file at its reader: the helper forked while it was
    open does not hold a copy (a browser driver in the test runner waited forever on one)."""
    read_end, write_end = os.pipe()
    reader = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=read_end)
    os.close(read_end)
    try:
        helper = new_decoder()
        assert helper.run(os.getpid, **CAPS) != os.getpid()
        os.close(write_end)
        assert reader.wait(timeout=10) == 0
    finally:
        reader.kill()
        reader.wait()
