"""The transcription pass of the extract step: read the speech an extractor found in a recording.

Each window of speech (``pipeline.speech.audio``) goes to the speech helper, a helper process of
the decoder's kind (``pipeline.sandbox``) that keeps the model loaded between windows and is
killed when a window runs past ``window_timeout_seconds``. Windows go one at a time, so
``before_window`` can report how far the transcript has come and stop the pass (a cancelled job)
between windows. Each window is read in the language whisper hears in it (a multilingual model),
so a recording that changes language is transcribed in each.

A window that cannot be read fails the source: a transcript with a hole would let a question about
the missing minutes end "no evidence" while the source looked complete.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import NamedTuple

import numpy as np

from pipeline.extractors.limits import ExtractLimits
from pipeline.sandbox import DecoderProcess
from pipeline.sandbox.outcomes import named_for
from pipeline.speech.models import label, missing, whisper
from pipeline.speech.settings import SpeechSettings
from pipeline.types import Extraction, PipelineError, Segment

# Windows per helper before it is replaced (the model stays loaded in between: loading costs ~1 s).
WINDOWS_PER_HELPER = 2_000
_SPEECH_HELPER = DecoderProcess(max_requests=WINDOWS_PER_HELPER, restart_share=float("inf"))
_HELPER_GRACE_SECONDS = 5

log = logging.getLogger(__name__)

BeforeWindow = Callable[[float, float], None]  # (seconds transcribed so far, seconds in all)
# A window shorter than this (a cough, a few words between pauses) is too little to tell a
# language by: it is read in the language of the window before it.
LANGUAGE_SECONDS = 5.0
Timed = tuple[float, float, str]


def speech_ready(settings: SpeechSettings) -> bool:
    """Whether recordings are transcribed here: it is on and its model can be loaded."""
    return settings.enabled and missing(settings.model) is None


def read_window(model_name: str, samples: np.ndarray, language: str | None = None) -> tuple[str, list[Timed]]:
    """What runs in the speech helper: the window's language (``language`` when given, else the
    one whisper hears) and its timed text (seconds from the window's start)."""
    try:
        segments, info = whisper(model_name).transcribe(
            samples, language=language, beam_size=5, condition_on_previous_text=False
        )
        return info.language, [(s.start, s.end, s.text.strip()) for s in segments if s.text.strip()]
    except RuntimeError as error:  # CTranslate2 reports a failed allocation as a RuntimeError
        if "allocate" in str(error):
            raise MemoryError(str(error)) from None
        raise


def speech_helper() -> DecoderProcess:
    """This process's speech helper (tests close it to start from a fresh one)."""
    return _SPEECH_HELPER


def transcribe(extraction: Extraction, limits: ExtractLimits, *, before_window: BeforeWindow | None = None) -> Extraction:
    """``extraction`` with the transcript of its speech as segments located by ``start``/``end``
    (seconds) when transcription is on and can run; the decoded sound is dropped either way."""
    audio, settings = extraction.speech, limits.speech
    if audio is None or not speech_ready(settings):
        return replace(extraction, speech=None)
    segments: list[Segment] = []
    language: str | None = None
    for start, end in audio.windows:
        if before_window is not None:
            before_window(start, audio.duration)
        hint = language if end - start < LANGUAGE_SECONDS else None
        language, timed = _read(settings, audio.window(start, end), hint)
        segments.extend(
            Segment(text, {"start": _within(start + begin, start, end), "end": _within(start + finish, start, end),
                           "transcript": label(settings.model), "language": language})
            for begin, finish, text in timed
        )
    return replace(extraction, segments=segments, speech=None, transcribed_by=label(settings.model))


def _within(seconds: float, start: float, end: float) -> float:
    """A time whisper gave, kept inside its window (it may place a last word past the sound)."""
    return round(min(max(seconds, start), end), 2)


def _read(settings: SpeechSettings, samples: np.ndarray, language: str | None) -> tuple[str, list[Timed]]:
    try:
        return _SPEECH_HELPER.run(
            partial(read_window, settings.model, samples, language),
            memory_mb=settings.memory_mb,
            timeout_seconds=settings.window_timeout_seconds + _HELPER_GRACE_SECONDS,
        )
    except PipelineError as error:
        raise _speech_error(error, settings) from None
    except RuntimeError as error:  # a bug in the helper: its traceback is in the message
        log.error("transcription failed: %s", error)
        raise PipelineError("TRANSCRIPTION_FAILED", f"the speech model failed: {str(error).strip().splitlines()[-1]}") from None


def _speech_error(error: PipelineError, settings: SpeechSettings) -> PipelineError:
    """How the helper's request ended, named for transcription and the settings that move its limits."""
    return named_for(
        error,
        timeout=PipelineError(
            "TRANSCRIPTION_TIMEOUT",
            f"A window of speech took over {settings.window_timeout_seconds} s to transcribe "
            "(raise GNOSI_SPEECH_WINDOW_TIMEOUT_SECONDS).",
        ),
        memory=PipelineError(
            "TRANSCRIPTION_MEMORY_LIMIT",
            f"Transcription needed more than {settings.memory_mb:,} MB (raise GNOSI_SPEECH_MEMORY_MB).",
        ),
        crashed=("TRANSCRIPTION_CRASHED", "The speech model crashed"),
    )


class Unheard(NamedTuple):
    """Why a recording has no transcript, and whether that fails the source (it does not when no
    one speaks in it: the source is read, with no text)."""

    code: str
    message: str
    failed: bool


def unheard_reason(extraction: Extraction, settings: SpeechSettings) -> Unheard | None:
    """For a recording without a transcript, why; None for other sources and transcribed ones."""
    if extraction.duration_seconds is None or extraction.segments:
        return None
    if extraction.transcribed_by:
        return Unheard("NO_SPEECH", f"No speech was heard in the recording ({extraction.duration_seconds:,.1f} s).", False)
    if not settings.enabled:
        return Unheard("NEEDS_TRANSCRIPTION", "Transcription is off (GNOSI_SPEECH_MODEL).", True)
    reason = missing(settings.model)
    if reason:
        return Unheard("NEEDS_TRANSCRIPTION", f"The recording cannot be transcribed here: {reason}.", True)
    return Unheard("NEEDS_TRANSCRIPTION", "The recording was not transcribed; refresh to transcribe it.", True)
