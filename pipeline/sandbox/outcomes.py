"""How a decode that did not return ends, named for the reader of a source's error.

Every message names the setting that moves the limit, so an operator can act on it.
"""
from __future__ import annotations

import os
import signal

from pipeline.types import PipelineError

MEMORY_LIMIT = "EXTRACT_MEMORY_LIMIT"
# A helper that died without a reply died inside native code (PDFium aborts when an allocation
# fails). When it had grown by a quarter of its budget by then, an allocation at the limit is by
# far the likeliest cause: a decoder that doubles a buffer fails while the buffer holds only a
# third of the budget, and the failed allocation itself never becomes resident.
NEAR_LIMIT_SHARE = 0.25


def memory_limit(memory_mb: int) -> PipelineError:
    return PipelineError(
        MEMORY_LIMIT,
        f"Reading the document needed more than {memory_mb:,} MB of memory (raise GNOSI_EXTRACT_MEMORY_MB).",
    )


def timed_out(timeout_seconds: float) -> PipelineError:
    return PipelineError(
        "EXTRACT_TIMEOUT",
        f"Reading the document took longer than {timeout_seconds:g} s (raise GNOSI_EXTRACT_TIMEOUT_SECONDS).",
    )


def death(status: int, *, grew: int, memory_mb: int) -> PipelineError:
    """Name why the helper ended without a reply, from its exit ``status`` and how many bytes its
    resident set ``grew`` during the request: the memory limit, or a crash of the decoder."""
    if grew >= NEAR_LIMIT_SHARE * (memory_mb << 20):
        return memory_limit(memory_mb)
    if os.WIFSIGNALED(status):
        how = signal.strsignal(os.WTERMSIG(status)) or f"signal {os.WTERMSIG(status)}"
    else:
        how = f"exit status {os.WEXITSTATUS(status)}"
    return PipelineError("EXTRACT_CRASHED", f"{CRASHED_WORDS} ({how}); the file is probably damaged.")


CRASHED_WORDS = "The decoder crashed on this file"


def named_for(error: PipelineError, *, timeout: PipelineError, memory: PipelineError, crashed: tuple[str, str]) -> PipelineError:
    """How a helper's request ended, named for the work another helper (OCR, speech) does with the
    decoder's machinery: its own timeout and memory errors (naming its settings), and a crash as
    ``crashed`` (code, words in place of "The decoder crashed on this file")."""
    if error.code == "EXTRACT_TIMEOUT":
        return timeout
    if error.code == MEMORY_LIMIT:
        return memory
    if error.code == "EXTRACT_CRASHED":
        code, words = crashed
        return PipelineError(code, error.message.replace(CRASHED_WORDS, words))
    return error
