"""What an OCR engine reads off one page image: lines of text, each with its box and confidence."""
from __future__ import annotations

from dataclasses import dataclass

# A box as fractions of the page's width and height: (left, top, right, bottom), origin top left.
# Fractions, not pixels, because the viewer draws the page at whatever scale fits the screen and
# the image OCR read was rendered at a resolution of its own.
Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class OcrLine:
    """One line of text in reading order, located on the page as it is shown (not as it was read)."""

    text: str
    box: Box
    confidence: float  # 0..1, the engine's own estimate


@dataclass(frozen=True)
class OcrPage:
    """Every line an engine read on one page, and how far the page was turned to read it."""

    engine: str
    lines: list[OcrLine]
    rotation: int = 0  # degrees clockwise the image was turned to stand upright: 0, 90, 180 or 270

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)
