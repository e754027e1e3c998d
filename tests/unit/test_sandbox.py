"""The extraction child: what comes back from it, how each way of dying is named, and that the
corpus reads exactly as it does in the worker's own process."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from pipeline.extractors import extract, pick
from pipeline.extractors.limits import ExtractLimits
from pipeline.extractors.registry import sniff
from pipeline.sandbox import run_limited
from pipeline.types import PipelineError


def _fail_with(code: str) -> None:
    raise PipelineError(code, "expected")


def _allocate(mib: int) -> bytearray:
    return bytearray(mib << 20)


def _reason(task, **caps) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(PipelineError) as caught:
        run_limited(task, **{"memory_mb": 64, "timeout_seconds": 30, **caps})
    return caught.value.code


def test_a_value_and_an_expected_error_come_back_unchanged() -> None:
    assert run_limited(lambda: {"pid": os.getpid(), "text": "é" * 10}, memory_mb=64, timeout_seconds=30)["text"] == "é" * 10
    assert run_limited(os.getpid, memory_mb=64, timeout_seconds=30) != os.getpid()
    assert _reason(lambda: _fail_with("PDF_CORRUPT")) == "PDF_CORRUPT"


def test_an_allocation_past_the_budget_is_a_memory_limit_and_below_it_is_not() -> None:
    assert _reason(lambda: _allocate(128)) == "EXTRACT_MEMORY_LIMIT"
    assert len(run_limited(lambda: _allocate(16), memory_mb=64, timeout_seconds=30)) == 16 << 20


def _sleep_after_writing_pid(path: Path) -> None:
    path.write_text(str(os.getpid()))
    time.sleep(60)


def test_a_child_past_its_time_is_killed_and_reaped(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    assert _reason(lambda: _sleep_after_writing_pid(pid_file), timeout_seconds=1) == "EXTRACT_TIMEOUT"
    assert time.monotonic() - started < 10
    with pytest.raises(ProcessLookupError):  # neither running nor a zombie waiting to be reaped
        os.kill(int(pid_file.read_text()), 0)


class _Interrupted(Exception):
    pass


def _interrupt(signum: int, frame: object) -> None:
    raise _Interrupted


def test_a_worker_interrupted_while_waiting_leaves_no_child_behind(tmp_path: Path) -> None:
    """Celery's soft time limit raises inside the waiting worker the same way."""
    pid_file = tmp_path / "child.pid"
    previous = signal.signal(signal.SIGALRM, _interrupt)
    try:
        signal.alarm(1)
        with pytest.raises(_Interrupted):
            run_limited(lambda: _sleep_after_writing_pid(pid_file), memory_mb=64, timeout_seconds=30)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_a_crash_in_native_code_is_named_a_crash() -> None:
    assert _reason(os.abort) == "EXTRACT_CRASHED"


def test_a_bug_in_the_child_surfaces_with_its_traceback() -> None:
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        run_limited(lambda: 1 / 0, memory_mb=64, timeout_seconds=30)


def _corpus_files(corpus_dir: Path) -> list[Path]:
    return sorted((corpus_dir / "pdf").glob("*.pdf")) + sorted((corpus_dir / "html").glob("*/source.html"))


def test_the_corpus_extracts_identically_through_the_child(corpus_dir: Path) -> None:
    limits = ExtractLimits()
    compared = 0
    for path in _corpus_files(corpus_dir):
        data = path.read_bytes()
        if not data:
            continue
        extractor = pick(sniff(data, path.name), path.name)
        try:
            expected: object = extractor.extract(data, filename=path.name, mime=sniff(data, path.name), limits=limits)
        except PipelineError as error:
            expected = error.code
        try:
            sandboxed: object = extract(data, filename=path.name, limits=limits)
        except PipelineError as error:
            sandboxed = error.code
        assert sandboxed == expected, path.name
        compared += 1
    assert compared >= 35
