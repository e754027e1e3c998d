"""A recording's sound as 16 kHz mono samples, and the windows of it where someone speaks.

Runs in the decoder helper (``pipeline.sandbox``): PyAV's FFmpeg parses whatever container and
codec a file claims, so it runs under the helper's memory and time caps like every decoder.
The length is checked from the container's header before decoding and again while decoding (a
header may lie). The stretches with sound in them are found by their loudness and gathered into
windows of at most ``WINDOW_SECONDS``: whisper reads 30 s at a time whatever it is given, so a
window holds as much sound as one reading can, it is cut in a pause rather than inside a word,
and silence costs nothing (a silent file has no window, and no transcript). Whisper itself
tells speech from other sound in a window. (faster-whisper's Silero detector would tell speech
from noise too, but its onnxruntime crashes in a process that loaded usearch first, as every
worker has: docs/decisions/0016.)
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.types import PipelineError

RATE = 16_000
WINDOW_SECONDS = 30.0
# Loudness is measured over frames of 20 ms. A frame below -50 dBFS is silence: a quiet room
# records at -60 to -50, speech at -35 to -10.
FRAME_SECONDS = 0.02
SILENCE_DB = -50.0
_FRAME = round(FRAME_SECONDS * RATE)
_WINDOW_FRAMES = round(WINDOW_SECONDS / FRAME_SECONDS)
# A window too long is cut at the quietest frame of its last 10 s (a pause between sentences).
_SEARCH_FRAMES = round(10 / FRAME_SECONDS)
# Silence shorter than half a second (a breath, a comma) does not end a stretch of sound; a
# stretch keeps 0.2 s on either side so that soft first and last syllables are read.
_PAUSE_FRAMES = round(0.5 / FRAME_SECONDS)
_PAD_FRAMES = round(0.2 / FRAME_SECONDS)
_BLOCK_FRAMES = 30_000  # ten minutes
_SMOOTHING = np.full(5, 1 / 5)  # 0.1 s
# A file that plays less than this share of the length its header claims was cut short. Damaged
# packets are skipped, as players skip them (joined recordings carry tags between their parts),
# until there are more than 50 of them and more than 2% of the packets read: a damaged file.
_CUT_SHORT = 0.9
_DAMAGED_PACKETS = 50
_DAMAGED_SHARE = 0.02


@dataclass(frozen=True)
class SpeechAudio:
    """Decoded sound (int16, ``RATE`` Hz, mono) and the windows to transcribe, in seconds."""

    samples: np.ndarray
    windows: list[tuple[float, float]]

    @property
    def duration(self) -> float:
        return len(self.samples) / RATE

    def window(self, start: float, end: float) -> np.ndarray:
        """The window's samples as whisper takes them (float32 in -1..1)."""
        return self.samples[round(start * RATE):round(end * RATE)].astype(np.float32) / 32768.0


def decode_speech(data: bytes, *, max_seconds: int) -> SpeechAudio:
    """``data``'s first audio stream, decoded; raises ``PipelineError`` for a file that is not
    playable media or is cut short (``MEDIA_CORRUPT``), has no sound (``MEDIA_NO_AUDIO``) or runs
    longer than ``max_seconds`` (``MEDIA_TOO_LONG``)."""
    import av

    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if not container.streams.audio:
                raise PipelineError("MEDIA_NO_AUDIO", "The file has no sound track to transcribe.")
            claimed = container.duration / av.time_base if container.duration is not None else None
            if claimed is not None and claimed > max_seconds:
                raise _too_long(claimed, max_seconds)
            samples = _decoded(container, container.streams.audio[0], claimed, max_seconds)
    except (av.error.FFmpegError, UnicodeDecodeError, ValueError) as error:
        raise PipelineError("MEDIA_CORRUPT", f"The file is not playable audio or video ({str(error)[:200]}).") from None
    if claimed is not None and len(samples) < _CUT_SHORT * claimed * RATE:
        raise PipelineError(
            "MEDIA_CORRUPT", f"The file is cut short: {len(samples) / RATE:,.0f} s of its {claimed:,.0f} s play."
        )
    return SpeechAudio(samples, speech_windows(samples))


def _decoded(container: Any, stream: Any, claimed: float | None, max_seconds: int) -> np.ndarray:
    """The stream as 16 kHz mono int16, written into one array sized from the header's length
    (grown if the header understated it), so the sound is never held twice. A damaged packet
    here and there is skipped, as players do; many are a damaged file."""
    import av

    resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
    samples = np.empty(int((claimed or 60) * RATE) + RATE, dtype=np.int16)
    count = damaged = 0
    for read, packet in enumerate(container.demux(stream), start=1):
        try:
            frames = packet.decode()
        except av.error.InvalidDataError:
            damaged += 1
            if damaged > _DAMAGED_PACKETS and damaged > _DAMAGED_SHARE * read:
                raise
            continue
        for frame in frames:
            for resampled in resampler.resample(frame):
                samples, count = _appended(samples, count, resampled.to_ndarray().reshape(-1))
        if count > max_seconds * RATE:
            raise _too_long(count / RATE, max_seconds)
    for resampled in resampler.resample(None):
        samples, count = _appended(samples, count, resampled.to_ndarray().reshape(-1))
    return samples[:count]


def _appended(samples: np.ndarray, count: int, more: np.ndarray) -> tuple[np.ndarray, int]:
    if count + len(more) > len(samples):
        samples = np.resize(samples, max(2 * len(samples), count + len(more)))
    samples[count:count + len(more)] = more
    return samples, count + len(more)


def _too_long(seconds: float, max_seconds: int) -> PipelineError:
    return PipelineError(
        "MEDIA_TOO_LONG",
        f"The recording runs {seconds:,.0f} s ({seconds / 60:,.1f} min); at most {max_seconds:,} s are "
        "transcribed (raise GNOSI_SPEECH_MAX_SECONDS).",
    )


def speech_windows(samples: np.ndarray) -> list[tuple[float, float]]:
    """The stretches of ``samples`` with sound in them, in order: a stretch longer than
    ``WINDOW_SECONDS`` is cut at its quietest moment near the end of each window, and short
    neighbouring stretches are gathered while they fit in one window."""
    loudness = _loudness(samples)
    pieces: list[tuple[int, int]] = []
    for first, last in _sounding(loudness):
        while last - first > _WINDOW_FRAMES:
            search = first + _WINDOW_FRAMES - _SEARCH_FRAMES
            averaged = np.convolve(loudness[search:first + _WINDOW_FRAMES], _SMOOTHING, mode="same")
            cut = search + int(np.argmin(averaged))  # in the middle of the quietest pause
            pieces.append((first, cut))
            first = cut
        pieces.append((first, last))
    windows: list[tuple[float, float]] = []
    for first, last in pieces:
        start, end = first * FRAME_SECONDS, min(last * FRAME_SECONDS, len(samples) / RATE)
        if windows and end - windows[-1][0] <= WINDOW_SECONDS:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
    return windows


def _loudness(samples: np.ndarray) -> np.ndarray:
    """Each frame's mean power in dB below full scale (a block at a time: three hours of sound as
    floats at once would be 690 MB)."""
    frames = len(samples) // _FRAME
    block = _BLOCK_FRAMES * _FRAME
    parts = []
    for offset in range(0, frames * _FRAME, block):
        chunk = samples[offset:min(offset + block, frames * _FRAME)].astype(np.float32) / 32768.0
        power = np.square(chunk).reshape(-1, _FRAME).mean(axis=1)
        parts.append(10 * np.log10(power + 1e-10))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


def _sounding(loudness: np.ndarray) -> list[tuple[int, int]]:
    """Runs of frames louder than silence (first, last + 1), bridged over pauses shorter than
    ``_PAUSE_SECONDS`` and padded a little on each side."""
    loud = np.flatnonzero(loudness > SILENCE_DB)
    if loud.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(loud) > _PAUSE_FRAMES)
    starts, ends = loud[np.r_[0, breaks + 1]], loud[np.r_[breaks, loud.size - 1]] + 1
    return [(max(int(a) - _PAD_FRAMES, 0), min(int(b) + _PAD_FRAMES, loudness.size)) for a, b in zip(starts, ends)]
