"""usearch's ``Index``, loaded only after onnxruntime's native library.

usearch's wheel links libstdc++ statically and exports its GNU-unique symbols, which bind
process-wide: an onnxruntime loaded after it (faster-whisper's voice detection, the MiniLM
embedder) resolves its own libstdc++ statics to usearch's copies and dies with SIGSEGV in its
static initialisers. Loaded the other way round both work. So this module loads onnxruntime's
library first (about 15 ms, without importing the Python package), and every user of usearch
imports ``Index`` from here.
"""
from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path


def _load_onnxruntime_library() -> None:
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or spec.origin is None:
        return
    for library in (Path(spec.origin).parent / "capi").glob("onnxruntime_pybind11_state*.so"):
        ctypes.CDLL(str(library))


_load_onnxruntime_library()

from usearch.index import Index  # noqa: E402  (after the library above, see the docstring)

__all__ = ["Index"]
