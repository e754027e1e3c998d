"""Turn the bytes of a web page or a text file into ``str`` without mojibake and without raising.

Labels lie more often than bytes do: servers and ``<meta>`` tags routinely declare a legacy charset
for files that are really UTF-8 (the corpus page ``html/qq/source.html`` says gb2312 and is UTF-8).
Valid UTF-8 is very unlikely to occur by accident in legacy encodings, so a strict UTF-8 decode that
succeeds outranks every label; only a byte-order mark is stronger evidence.
"""
from __future__ import annotations

import codecs
import re

from charset_normalizer import from_bytes

# Order matters: the UTF-32-LE mark starts with the UTF-16-LE mark.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Browsers (WHATWG Encoding Standard) read these labels as a superset; Python's codecs of the same
# name reject bytes that real pages labelled this way contain.
_SUPERSETS = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "iso-8859-1": "cp1252",
    "latin-1": "cp1252",
    "latin1": "cp1252",
    "ascii": "cp1252",
    "us-ascii": "cp1252",
}

# The HTML spec looks for the <meta> declaration in the first 1024 bytes; real pages put long
# comments or scripts first, so look a little further.
_META_WINDOW = 4096
_META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]+)""", re.IGNORECASE)


def decode_html(data: bytes, declared_charset: str | None) -> str:
    """Decode an HTML document: BOM, valid UTF-8, HTTP charset, ``<meta>`` charset, detection."""
    return _decode(data, [declared_charset, _meta_charset(data)])


def decode_text(data: bytes, declared_charset: str | None) -> str:
    """Decode a plain-text or Markdown file: BOM, valid UTF-8, declared charset, detection."""
    return _decode(data, [declared_charset])


def _decode(data: bytes, labels: list[str | None]) -> str:
    """Try the evidence from strongest to weakest; fall back to a lossy decode, never raise."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data[len(bom):].decode(encoding, errors="replace")
    # NUL bytes are valid UTF-8 but betray UTF-16/32 without a BOM: leave those to detection.
    if b"\x00" not in data:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    candidates = [codec for codec in map(_codec, labels) if codec]
    detected = _detected(data)
    if detected:
        candidates.append(detected)
    for codec in candidates:
        try:
            return data.decode(codec)
        except UnicodeDecodeError:
            continue
    return data.decode(candidates[0] if candidates else "utf-8", errors="replace")


def _codec(label: str | None) -> str | None:
    """Map a charset label to a Python codec name, or ``None`` when Python does not know it."""
    if not label:
        return None
    name = label.strip().strip("\"'").lower()
    name = _SUPERSETS.get(name, name)
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _meta_charset(data: bytes) -> str | None:
    """The charset a ``<meta charset>`` or ``<meta http-equiv content=...charset=>`` declares."""
    match = _META_CHARSET.search(data[:_META_WINDOW])
    return match.group(1).decode("ascii") if match else None


def _detected(data: bytes) -> str | None:
    """charset-normalizer's best guess, mapped through the same superset table as labels."""
    best = from_bytes(data).best()
    return _codec(best.encoding) if best is not None else None
