"""WebVTT subtitles: each cue a stretch of speech located by its ``start``/``end``, like a transcript.

A streaming site's own subtitles (``pipeline.streaming``) are read instead of transcribing the
recording when the site offers them in the recording's language: written by people, they beat a
speech model and cost no minutes of CPU. An attached ``.vtt`` file is read the same way. Which
was used is said in every locator (``transcript``) and on the source (``transcribed_by``).
"""
from __future__ import annotations

import io
import re

import webvtt
from webvtt.errors import MalformedFileError
from webvtt.models import Timestamp

from pipeline.charset import decode_text
from pipeline.extractors.base import Extractor, extension
from pipeline.extractors.limits import CharBudget, ExtractLimits
from pipeline.types import Extraction, PipelineError, Segment

VTT_MIME = "text/vtt"
# "talk.en.vtt", "subtitles.pt-BR.vtt": the language before the extension, as sites name them.
_LANGUAGE = re.compile(r"\.([a-z]{2,3}(?:-[A-Za-z0-9]{2,8})?)\.vtt$", re.IGNORECASE)


class SubtitlesExtractor(Extractor):
    """Not sandboxed: parsing cues costs a small multiple of the text, which the budget bounds."""

    name = "subtitles"
    sandboxed = False

    def score(self, mime: str, filename: str) -> int:
        return 10 if mime == VTT_MIME else 5 if extension(filename) == "vtt" else 0

    def extract(
        self,
        data: bytes,
        *,
        filename: str,
        mime: str,
        url: str | None = None,
        declared_charset: str | None = None,
        limits: ExtractLimits,
    ) -> Extraction:
        budget = CharBudget(limits)
        budget.check_encoded(len(data))
        try:
            captions = webvtt.from_buffer(io.StringIO(decode_text(data, declared_charset))).captions
        except MalformedFileError:
            raise PipelineError("SUBTITLES_INVALID", f"{filename[:200]}: not a WebVTT subtitles file.") from None
        found = _LANGUAGE.search(filename)
        language = found.group(1) if found else None
        label = ("site subtitles" if url else "subtitles file") + (f" ({language})" if language else "")
        segments = []
        for caption in captions:
            text = " ".join(caption.text.split())
            if not text:
                continue
            budget.spend(len(text))
            start, end = _seconds(caption.start_time), _seconds(caption.end_time)
            locator = {"start": start, "end": max(end, start), "transcript": label}
            segments.append(Segment(text, {**locator, "language": language} if language else locator))
        return Extraction(
            mime=VTT_MIME,
            segments=segments,
            duration_seconds=max((segment.locator["end"] for segment in segments), default=0.0),
            transcribed_by=label,
        )


def _seconds(stamp: Timestamp) -> float:
    return round(stamp.in_milliseconds() / 1000, 3)
