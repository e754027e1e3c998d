"""Documents that explode, built in memory so no binary file is committed (issue #11, item 5).

Each is a few hundred bytes to a megabyte of input that asks a decoder for gigabytes or hours:
a page that draws one Form XObject thousands of times (millions of characters from 1 KB), a
page tree that names one page 200,000 times, a Flate stream that inflates to a gibibyte, and web
pages whose parse tree dwarfs their bytes.
"""
from __future__ import annotations

import struct
import zlib

_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
_PAGE_KIDS = 500  # pages per intermediate node of the page tree


def text_flood_pdf(*, draws: int, pages: int = 1, lines: int = 10, width: int = 100) -> bytes:
    """``pages`` references to one page that draws a Form XObject ``draws`` times; the form holds
    ``lines`` lines of ``width`` letters, so each page has about draws x lines x (width + 1)
    characters while the file stays near 1 KB."""
    form = b"".join(b"BT /F1 1 Tf 0 %d Td (" % i + b"A" * width + b") Tj ET\n" for i in range(lines))
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R"
        b" /Resources << /XObject << /X 5 0 R >> >> >>"
    )
    return _document(
        page,
        [
            _stream(b"q /X Do Q\n" * draws),
            _stream(form, b" /Type /XObject /Subtype /Form /BBox [0 0 200 200] /Resources << /Font << /F1 6 0 R >> >>"),
            _FONT,
        ],
        pages,
    )


def page_count_lie_pdf(claimed: int) -> bytes:
    """One real page under a page tree whose /Count claims ``claimed`` pages."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count %d >>" % claimed,
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        _stream(b"BT /F1 12 Tf 10 100 Td (hello) Tj ET\n"),
        _FONT,
    ]
    return write_pdf(objects)


def flate_bomb_pdf(inflated_mib: int) -> bytes:
    """One page whose content stream inflates to ``inflated_mib`` MiB of spaces (then one line of
    text); the file is about 1 KB per inflated MiB.

    One MiB is compressed once after a full flush, which leaves no reference to earlier data, and
    repeated; the zlib trailer carries the real checksum, so the stream is valid to any reader.
    """
    spaces = b" " * (1 << 20)
    tail = b"BT /F1 12 Tf 10 100 Td (tail) Tj ET\n"
    raw = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = raw.compress(spaces) + raw.flush(zlib.Z_FULL_FLUSH)
    last = raw.compress(tail) + raw.flush(zlib.Z_FINISH)
    checksum = 1
    for _ in range(inflated_mib):
        checksum = zlib.adler32(spaces, checksum)
    checksum = zlib.adler32(tail, checksum)
    data = b"\x78\xda" + block * inflated_mib + last + struct.pack(">I", checksum)
    content = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>"
    )
    return _document(page, [content, _FONT], 1)


def repeated_paragraphs_html(mib: int) -> bytes:
    """``mib`` MiB of one paragraph repeated: trafilatura's parse and de-duplication take seconds
    per MiB and far more memory than the bytes, though little text survives."""
    paragraph = b"<p>" + b"The quick brown fox jumps over the lazy dog. " * 20 + b"</p>\n"
    return _html(paragraph * ((mib << 20) // len(paragraph)))


def distinct_paragraphs_html(count: int) -> bytes:
    """``count`` different paragraphs (about 90 bytes each): all of it is main text."""
    body = b"".join(
        b"<p>Paragraph %d says the quick brown fox jumps over the lazy dog number %d.</p>\n" % (i, i)
        for i in range(count)
    )
    return _html(body)


def _html(body: bytes) -> bytes:
    return b"<html><head><title>Bomb</title></head><body><article>" + body + b"</article></body></html>"


def _stream(data: bytes, extra: bytes = b"") -> bytes:
    packed = zlib.compress(data, 9)
    return b"<< /Length %d /Filter /FlateDecode%s >>\nstream\n" % (len(packed), extra) + packed + b"\nendstream"


def _document(page: bytes, rest: list[bytes], pages: int) -> bytes:
    """Catalog (1), page tree (2), one page (3) and its objects (4...), the page named ``pages``
    times: the root names one intermediate node (the last object) once per 500 pages and that
    node names the page 500 times, so the file stays small however many pages it claims."""
    kids_per_node = min(pages, _PAGE_KIDS)
    assert pages % kids_per_node == 0, "pages must be a multiple of 500 above 500"
    node_ref = b"%d 0 R" % (4 + len(rest))
    node = b"<< /Type /Pages /Parent 2 0 R /Kids [" + b" ".join([b"3 0 R"] * kids_per_node) + b"] /Count %d >>" % kids_per_node
    root = b"<< /Type /Pages /Kids [" + b" ".join([node_ref] * (pages // kids_per_node)) + b"] /Count %d >>" % pages
    return write_pdf([b"<< /Type /Catalog /Pages 2 0 R >>", root, page, *rest, node])


def write_pdf(objects: list[bytes]) -> bytes:
    """A PDF with a correct cross-reference table; ``objects[i]`` is object number i + 1."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)
