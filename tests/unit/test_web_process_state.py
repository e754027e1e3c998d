"""What several web processes must agree on: chat socket caps (app/api/ws_slots.py) and the order
of shared-mode turns (app/services/turn_locks.py), held by real other processes, and let go of
when such a process is killed without a chance to clean up."""
from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from app.api.ws_slots import GLOBAL_CAP_CODE, USER_CAP_CODE, SocketRefused, SocketSlots
from app.services.turn_locks import TurnLocks
from pipeline.types import PipelineError

REPO = Path(__file__).resolve().parents[2]
HOLD_SOCKETS = """
import sys, time
from contextlib import ExitStack
from pathlib import Path
from app.api.ws_slots import SocketSlots
slots = SocketSlots(Path(sys.argv[1]), 100, 100)
with ExitStack() as stack:
    for _ in range(2):
        slots.bind_user(stack.enter_context(slots.slot()), "carol")
    print("holding", flush=True)
    time.sleep(600)
"""
HOLD_TURN = """
import sys, time
from pathlib import Path
from app.services.turn_locks import TurnLocks
from pipeline.types import PipelineError
with TurnLocks(Path(sys.argv[1])).hold("thread1"):
    print("holding", flush=True)
    time.sleep(600)
"""


@contextmanager
def other_process(script: str, folder: Path) -> Iterator[subprocess.Popen[str]]:
    """A process that holds something in ``folder`` until it is killed (SIGKILL: no cleanup)."""
    process = subprocess.Popen([sys.executable, "-c", script, str(folder)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "holding"
        yield process
    finally:
        process.kill()
        process.wait()


def test_sockets_another_process_holds_count_against_the_caps_until_it_dies(tmp_path: Path) -> None:
    slots = SocketSlots(tmp_path / "sockets", max_sockets=3, per_user=2)
    with ExitStack() as stack:
        with other_process(HOLD_SOCKETS, tmp_path / "sockets"):
            mine = stack.enter_context(slots.slot())
            with pytest.raises(SocketRefused) as full, slots.slot():
                pass
            assert full.value.code == GLOBAL_CAP_CODE
            with pytest.raises(SocketRefused) as busy_user:
                slots.bind_user(mine, "carol")  # carol's two sockets are in the other process
            assert busy_user.value.code == USER_CAP_CODE
        # Killed with its sockets open: its claims go at the next claim, not at a restart.
        slots.bind_user(mine, "carol")
        stack.enter_context(slots.slot())
        slots.bind_user(stack.enter_context(slots.slot()), "carol")
    assert not [claim for claim in (tmp_path / "sockets").iterdir() if not claim.name.startswith(".")]


def test_a_shared_turn_waits_while_another_process_holds_its_thread_and_goes_on_when_it_dies(tmp_path: Path) -> None:
    locks = TurnLocks(tmp_path / "turns")
    with other_process(HOLD_TURN, tmp_path / "turns") as holder:
        acquired = threading.Event()

        def take() -> None:
            with locks.hold("thread1"):
                acquired.set()

        waiter = threading.Thread(target=take)
        waiter.start()
        with locks.hold("thread2"):  # another conversation is not held up
            pass
        time.sleep(0.3)
        assert not acquired.is_set()
        holder.send_signal(signal.SIGKILL)  # the kernel releases a dead holder's lock
        assert acquired.wait(5)
        waiter.join()


def test_a_shared_turn_waits_a_bounded_time_then_says_the_conversation_is_busy(tmp_path: Path) -> None:
    locks = TurnLocks(tmp_path / "turns", wait_seconds=0.3)
    with other_process(HOLD_TURN, tmp_path / "turns"):
        started = time.monotonic()
        with pytest.raises(PipelineError) as busy, locks.hold("thread1"):
            pass
    assert busy.value.code == "CONVERSATION_BUSY" and 0.3 <= time.monotonic() - started < 5  # not the holder's 600 s


def test_a_thread_id_cannot_name_a_file_elsewhere(tmp_path: Path) -> None:
    with pytest.raises(ValueError), TurnLocks(tmp_path).hold("../escape"):
        pass
