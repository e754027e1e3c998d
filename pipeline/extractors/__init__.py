"""Source bytes to located text: ``extract`` picks the best registered extractor for a source.

Adding a format (OCR for images, audio transcription) means one new module with an ``Extractor``
subclass and one line in ``_BUILT_IN`` below; nothing else changes.

The built-in extractors are imported the first time ``extract``, ``pick`` or ``register`` is
asked for, not when the package is: settings import ``pipeline.extractors.limits``, and every web
and beat process would otherwise load trafilatura, PDFium and yt-dlp (~1.4 s of each start) for
nothing.
"""
from __future__ import annotations

import threading
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.extractors.registry import extract, pick, register

_BUILT_IN = (
    ("pipeline.extractors.pdf", "PdfExtractor"),
    ("pipeline.extractors.html", "HtmlExtractor"),
    ("pipeline.extractors.text", "TextExtractor"),
    ("pipeline.extractors.image", "ImageExtractor"),
    ("pipeline.extractors.media", "MediaExtractor"),
    ("pipeline.extractors.subtitles", "SubtitlesExtractor"),
)
_registry: ModuleType | None = None
_registering = threading.Lock()  # two threads' first uses must not register the built-ins twice

__all__ = ["extract", "pick", "register"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_with_built_ins(), name)


def _with_built_ins() -> ModuleType:
    """The registry, with the built-in extractors registered once (before any of the caller's)."""
    global _registry
    with _registering:
        if _registry is None:
            registry = import_module("pipeline.extractors.registry")
            for module, cls in _BUILT_IN:
                registry.register(getattr(import_module(module), cls)())
            _registry = registry
    return _registry
