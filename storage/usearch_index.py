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
import importlib.machinery
import importlib.util
import logging
from pathlib import Path

log = logging.getLogger(__name__)


def _load_onnxruntime_library() -> None:
    """A library that does not load is logged, not raised: it would stop every process, while
    only the model embedder and speech need it (they fail on their own, with their own error)."""
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or spec.origin is None:
        return
    capi = Path(spec.origin).parent / "capi"
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:  # this interpreter's build only
        library = capi / f"onnxruntime_pybind11_state{suffix}"
        if library.is_file():
            try:
                ctypes.CDLL(str(library))
            except OSError:
                log.warning("onnxruntime's library %s does not load; loading it later may crash", library, exc_info=True)
            return


_load_onnxruntime_library()

from usearch.index import Index  # noqa: E402  (after the library above, see the docstring)

__all__ = ["Index"]
