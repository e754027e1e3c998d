"""How a numbered heading is written ("2.3 Results", "IV. Discussion", "A.1 Overview"): one
grammar for the parser, which tells headings from text by it, and the planner, which titles a
unit by the heading without its number."""
from __future__ import annotations

import re

NUMBERED = re.compile(
    r"^(?:(?P<arabic>\d{1,2}(?:\.\d{1,2}){0,4})\.?|(?P<roman>[IVX]{1,6})\.|"
    r"(?P<letter>[A-Z])(?:(?P<sub>(?:\.\d{1,2}){1,3})\.?|\.))\s+(?P<title>[A-Z\u00c0-\u024f].*)$"
)


def heading_title(text: str) -> str:
    """A heading as a title: its number ("2.3", "IV.", "A.1") and trailing punctuation dropped."""
    flat = " ".join(text.split())
    numbered = NUMBERED.match(flat)
    cleaned = (numbered.group("title") if numbered else flat).rstrip(" .:;,")
    return cleaned or flat
