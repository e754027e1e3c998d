"""The beat lock with real processes: held while any process that inherited it lives, free the
moment the last one is SIGKILLed, and a refused taker learns who holds it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.instance_lock import InstanceLock, LockHeld

SLEEPER = [sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"]


def sleeper(**popen_args: object) -> subprocess.Popen:
    """A child that has certainly finished its exec (the kernel closes close-on-exec descriptors
    during exec, possibly after Popen returned): it printed from the new program."""
    child = subprocess.Popen(SLEEPER, stdout=subprocess.PIPE, **popen_args)  # type: ignore[call-overload]
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    return child


def test_a_lock_handed_to_a_child_lives_and_dies_with_the_child(tmp_path: Path) -> None:
    path = tmp_path / "beat.lock"
    lock = InstanceLock.acquire(path, "first (pid 1)")
    child = sleeper(pass_fds=(lock.fd,))
    try:
        lock.close()  # what serve does after starting its worker: only the child holds it now
        with pytest.raises(LockHeld) as refused:
            InstanceLock.acquire(path, "second")
        assert refused.value.holder == "first (pid 1)"
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        InstanceLock.acquire(path, "second").close()
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("kept", [False, True])
def test_only_a_lock_kept_across_exec_survives_into_the_program_execd(tmp_path: Path, kept: bool) -> None:
    """`gnosi worker --beat` execs into Celery: without keep_across_exec the lock would end there."""
    path = tmp_path / "beat.lock"
    lock = InstanceLock.acquire(path, "gnosi worker --beat")
    if kept:
        lock.keep_across_exec()
    child = sleeper(close_fds=False)
    try:
        lock.close()
        if kept:
            with pytest.raises(LockHeld):
                InstanceLock.acquire(path, "next")
        else:
            InstanceLock.acquire(path, "next").close()
    finally:
        child.kill()
        child.wait()
