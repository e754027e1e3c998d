"""The decoder helper's outcomes: what comes back from it, how each way of ending is named, and
that the corpus reads exactly as it does in the worker's own process.

Tasks are module-level functions (or partials of them): they reach the helper pickled by reference.
"""
from __future__ import annotations

import ctypes
import operator
import os
import pickle
import signal
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest

from pipeline.extractors import extract, pick
from pipeline.extractors.limits import ExtractLimits
from pipeline.extractors.registry import sniff
from pipeline.sandbox import DecoderProcess
from pipeline.types import PipelineError

CAPS = {"memory_mb": 64, "timeout_seconds": 30}
NewDecoder = Callable[..., DecoderProcess]  # the new_decoder fixture (tests/unit/conftest.py)


def _fail_with(code: str) -> None:
    raise PipelineError(code, "expected")


def _text() -> dict[str, str]:
    return {"text": "é" * 10}


def _allocate(mib: int) -> bytearray:
    return bytearray(mib << 20)


def _touch(mib: int) -> int:
    """Make ``mib`` MiB resident (every byte written), then let it go."""
    return len(b"\x01" * (mib << 20))


def _grow_then_abort(mib: int) -> None:
    resident = b"\x01" * (mib << 20)
    assert resident
    os.abort()


def _sleep_after_writing_pid(path: Path) -> None:
    path.write_text(str(os.getpid()))
    time.sleep(60)


def _refuse() -> None:
    raise ValueError("cannot be rebuilt in the helper")


class _Unreadable:
    """Pickles in the worker; rebuilding it in the helper raises."""

    def __reduce__(self) -> tuple[Callable[[], None], tuple[()]]:
        return _refuse, ()


def _reason(helper: DecoderProcess, task: Callable[[], object], **caps: int) -> str:
    with pytest.raises(PipelineError) as caught:
        helper.run(task, **{**CAPS, **caps})
    return caught.value.code


def _gone(pid: int) -> bool:
    """Neither running nor a zombie waiting to be reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_value_and_an_expected_error_come_back_unchanged(new_decoder: NewDecoder) -> None:
    helper = new_decoder()
    assert helper.run(_text, **CAPS) == {"text": "é" * 10}
    assert helper.run(os.getpid, **CAPS) != os.getpid()
    assert _reason(helper, partial(_fail_with, "PDF_CORRUPT")) == "PDF_CORRUPT"


def test_an_allocation_past_the_budget_is_a_memory_limit_and_below_it_is_not(new_decoder: NewDecoder) -> None:
    helper = new_decoder()
    assert _reason(helper, partial(_allocate, 128)) == "EXTRACT_MEMORY_LIMIT"
    assert len(helper.run(partial(_allocate, 16), **CAPS)) == 16 << 20


def test_a_helper_past_its_time_is_killed_and_reaped(new_decoder: NewDecoder, tmp_path: Path) -> None:
    pid_file = tmp_path / "helper.pid"
    started = time.monotonic()
    assert _reason(new_decoder(), partial(_sleep_after_writing_pid, pid_file), timeout_seconds=1) == "EXTRACT_TIMEOUT"
    assert time.monotonic() - started < 10
    assert _gone(int(pid_file.read_text()))


class _Interrupted(Exception):
    pass


def _interrupt(signum: int, frame: object) -> None:
    raise _Interrupted


def test_a_worker_interrupted_while_waiting_leaves_no_helper_behind(new_decoder: NewDecoder, tmp_path: Path) -> None:
    """Celery's soft time limit raises inside the waiting worker the same way."""
    helper = new_decoder()
    pid_file = tmp_path / "helper.pid"
    previous = signal.signal(signal.SIGALRM, _interrupt)
    try:
        signal.alarm(1)
        with pytest.raises(_Interrupted):
            helper.run(partial(_sleep_after_writing_pid, pid_file), **CAPS)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert _gone(int(pid_file.read_text()))
    assert helper.run(_text, **CAPS) == {"text": "é" * 10}  # the next request gets a new helper


def test_a_crash_in_native_code_is_named_a_crash(new_decoder: NewDecoder) -> None:
    assert _reason(new_decoder(), os.abort) == "EXTRACT_CRASHED"


def test_a_death_is_named_by_what_this_request_grew_not_an_earlier_one(new_decoder: NewDecoder) -> None:
    """PDFium aborts when an allocation fails: a helper that died after growing by a quarter of
    its budget is at the memory limit. The growth must be this request's: a helper that once
    held 48 MiB and then crashed on a damaged file did not run out of memory."""
    helper = new_decoder()
    assert helper.run(partial(_touch, 48), **CAPS) == 48 << 20
    assert helper.pid is not None  # kept, not replaced: the crash below is in the helper that held 48 MiB
    assert _reason(helper, os.abort) == "EXTRACT_CRASHED"
    assert _reason(helper, partial(_grow_then_abort, 40)) == "EXTRACT_MEMORY_LIMIT"


@pytest.fixture
def worker_with_free_heap() -> Iterator[None]:
    """A worker whose heap holds 80 MiB it freed but still has resident, as a long-running worker
    (or this test run) does: a helper forked from it inherits those pages."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    blocks = [libc.malloc(100_000) for _ in range(800)]  # below glibc's mmap threshold: on the heap
    for block in blocks:
        ctypes.memset(block, 1, 100_000)
    for block in blocks[:-1]:  # the last one holds the top of the heap, so nothing is trimmed
        libc.free(ctypes.c_void_p(block))
    yield
    libc.free(ctypes.c_void_p(blocks[-1]))


@pytest.mark.usefixtures("worker_with_free_heap")
def test_a_death_at_the_limit_is_named_so_when_the_worker_had_freed_memory(new_decoder: NewDecoder) -> None:
    """Pages the helper inherited, freed but resident, would absorb the growth unseen."""
    assert _reason(new_decoder(), partial(_grow_then_abort, 40)) == "EXTRACT_MEMORY_LIMIT"


def test_a_bug_in_the_helper_surfaces_with_its_traceback(new_decoder: NewDecoder) -> None:
    helper = new_decoder()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        helper.run(partial(operator.truediv, 1, 0), **CAPS)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="reading the request(.|\n)*cannot be rebuilt"):
        helper.run(partial(len, _Unreadable()), **CAPS)
    assert time.monotonic() - started < 5  # answered, not left to time out
    assert helper.run(_text, **CAPS) == {"text": "é" * 10}


def test_a_task_that_cannot_travel_is_refused_in_the_caller(new_decoder: NewDecoder) -> None:
    with pytest.raises((pickle.PicklingError, AttributeError)):  # a lambda has no name to import
        new_decoder().run(lambda: 1, **CAPS)


def _corpus_files(corpus_dir: Path) -> list[Path]:
    return sorted((corpus_dir / "pdf").glob("*.pdf")) + sorted((corpus_dir / "html").glob("*/source.html"))


def test_the_corpus_extracts_identically_through_the_helper(corpus_dir: Path) -> None:
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
