"""Audio and video files: their sound decoded and its speech found, for the transcription pass.

The extractor decodes (``pipeline.speech.audio``, in the decoder helper under its caps) and hands
the sound on in the extraction (``Extraction.speech``); the transcription pass of the extract
step (``pipeline.speech.transcribing``) reads it window by window in a helper of its own.
"""
from __future__ import annotations

from pipeline.extractors.base import Extractor, extension, kind_score
from pipeline.extractors.limits import ExtractLimits
from pipeline.speech.audio import decode_speech
from pipeline.types import Extraction, PipelineError

MIME_OF_EXTENSION = {
    "mp3": "audio/mpeg", "wav": "audio/wav", "flac": "audio/flac", "ogg": "audio/ogg", "oga": "audio/ogg",
    "opus": "audio/ogg", "m4a": "audio/mp4", "aac": "audio/aac", "mp4": "video/mp4", "m4v": "video/mp4",
    "mov": "video/quicktime", "webm": "video/webm", "mkv": "video/x-matroska",
}
_MEDIA_TYPES = ("audio/", "video/")


class MediaExtractor(Extractor):
    name = "media"

    def score(self, mime: str, filename: str) -> int:
        return kind_score(mime.startswith(_MEDIA_TYPES), filename, MIME_OF_EXTENSION)

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
        try:
            audio = decode_speech(data, max_seconds=limits.speech.max_seconds)
        except PipelineError as error:
            raise PipelineError(error.code, f"{filename[:200]}: {error.message}") from None
        return Extraction(
            mime=mime if mime.startswith(_MEDIA_TYPES) else MIME_OF_EXTENSION[extension(filename)],
            segments=[],
            duration_seconds=round(audio.duration, 3),
            speech=audio,
        )
