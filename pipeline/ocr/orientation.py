"""Turning a page image upright, and putting boxes found on the upright image back on the page.

Engines read upright text only, while a scanner's output may lie on its side or upside down (the
corpus has a PDF whose four pages are turned 0, 90, 180 and 270 degrees). Citations point at the
page as the viewer shows it, which is the page as stored, so every box is mapped back.
"""
from __future__ import annotations

import numpy as np

from pipeline.ocr.lines import Box

ROTATIONS = (0, 90, 180, 270)


def turned(image: np.ndarray, rotation: int) -> np.ndarray:
    """``image`` turned ``rotation`` degrees clockwise (numpy's rot90 turns counter-clockwise)."""
    return np.ascontiguousarray(np.rot90(image, k=-(rotation // 90) % 4))


def box_on_page(box: Box, rotation: int) -> Box:
    """A box found on the image turned ``rotation`` degrees clockwise, on the unturned page."""
    left, top, right, bottom = box
    corners = [_point_on_page(x, y, rotation) for x, y in ((left, top), (right, bottom))]
    xs, ys = [x for x, _ in corners], [y for _, y in corners]
    return (round(min(xs), 4), round(min(ys), 4), round(max(xs), 4), round(max(ys), 4))


def _point_on_page(x: float, y: float, rotation: int) -> tuple[float, float]:
    if rotation == 90:
        return y, 1 - x
    if rotation == 180:
        return 1 - x, 1 - y
    if rotation == 270:
        return 1 - y, x
    return x, y
