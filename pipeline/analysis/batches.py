"""Bounded batches: what one map or reduce step may read.

A batch holds at most ``max_items`` inputs and ``max_chars`` characters of their text; inputs keep
their order (a document's chunks stay together, so a summary reads like the source). An input
larger than ``max_chars`` alone is refused: the bound is a promise about every step's input.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class BatchBounds:
    """``max_items`` chunks (map) or points (reduce) and ``max_chars`` characters per step; the
    defaults hold forty chunks of the default 1,200 characters, about 6,000 tokens."""

    max_items: int = 40
    max_chars: int = 48_000

    def __post_init__(self) -> None:
        if self.max_items < 2 or self.max_chars < 1:
            raise ValueError("a batch must hold at least two inputs and one character")


def batches(
    items: Sequence[T], size: Callable[[T], int], bounds: BatchBounds, count: Callable[[T], int] = lambda item: 1
) -> list[list[T]]:
    """``items`` cut, in order, into batches within ``bounds`` (each as full as it can be);
    ``count`` says how many inputs an item is (a summary is as many as its points)."""
    cut: list[list[T]] = []
    current: list[T] = []
    chars = held = 0
    for item in items:
        length, many = size(item), count(item)
        if length > bounds.max_chars or many > bounds.max_items:
            raise ValueError(f"an input of {length:,} characters ({many} items) is larger than a batch")
        if current and (held + many > bounds.max_items or chars + length > bounds.max_chars):
            cut.append(current)
            current, chars, held = [], 0, 0
        current.append(item)
        chars += length
        held += many
    if current:
        cut.append(current)
    return cut
