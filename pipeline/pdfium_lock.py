"""The one lock every call into PDFium takes (text extraction and page rendering alike).

PDFium is not thread-safe, not even across different documents: every call into it from this
process goes through this lock, so a threaded worker pool cannot crash the interpreter.
Extraction runs in a decoder helper forked from the worker (pipeline.sandbox), which serves one
request at a time, so the lock is uncontended there; it still guards every call made in-process.
Holding it across every fork means no other thread of a threaded worker is inside PDFium at that
instant, and the helper, whose only thread is the forking one, starts with the lock released.
"""
from __future__ import annotations

import os
import threading

PDFIUM_LOCK = threading.Lock()
os.register_at_fork(
    before=PDFIUM_LOCK.acquire, after_in_parent=PDFIUM_LOCK.release, after_in_child=PDFIUM_LOCK.release
)
