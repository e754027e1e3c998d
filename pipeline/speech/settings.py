"""How speech is transcribed: which model, within which caps (README: GNOSI_SPEECH_*)."""
from __future__ import annotations

from dataclasses import dataclass

OFF = "off"
# GNOSI_SPEECH_MODEL's named values, the default first (docs/decisions/0016 has the measurement);
# an absolute path to a CTranslate2 whisper model folder is accepted too (a larger model).
MODEL_CHOICES = ("base", "tiny.en", OFF)


@dataclass(frozen=True)
class SpeechSettings:
    """Per-source caps; they are part of the extraction cache key, so changing one transcribes again.

    ``base`` is the default because it tells languages apart (a German lecture is transcribed in
    German) at a real-time factor of 0.16 with one thread here; ``tiny.en`` is English only,
    a little faster (0.14) and slightly more accurate on clear English. Three hours hold a long lecture or meeting: its sound is 345 MB at
    16 kHz (int16) and decodes in about 20 s. A window is at most 30 s of speech (whisper's own
    window), read in under 10 s here: 120 s is over ten times that.
    """

    model: str = MODEL_CHOICES[0]
    max_seconds: int = 3 * 3600
    window_timeout_seconds: int = 120
    memory_mb: int = 4_096

    @property
    def enabled(self) -> bool:
        return self.model != OFF
