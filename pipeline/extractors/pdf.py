"""PDF page text through PDFium (pypdfium2): one segment per page, located by physical page.

PDFium reads page text 55-200x faster than pdfplumber's ``extract_text`` and spaces words better
(STACK.md), so it does the bulk work here; pdfplumber stays for tables and word boxes elsewhere.
"""
from __future__ import annotations

import re
from contextlib import closing

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from pipeline.extractors.base import Extractor, extension
from pipeline.extractors.limits import CharBudget, ExtractLimits
from pipeline.extractors.page_furniture import remove_running_lines
from pipeline.extractors.reference_lists import mark_reference_lists
from pipeline.pdfium_lock import PDFIUM_LOCK
from pipeline.types import Extraction, PipelineError, Segment

PDF_MIMES = frozenset({"application/pdf", "application/x-pdf", "application/acrobat"})

# PDFium marks a hyphen it saw at a line end with U+FFFE and joins the lines itself.
_MARKED_HYPHEN = re.compile("\ufffe(.?)", re.DOTALL)
# C0/C1 controls except tab and newline, and U+FFFF: math fonts map glyph pieces to these codes.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\uffff]")
_TRAILING_SPACE = re.compile(r"[ \t]+\n")
_BLANK_LINES = re.compile(r"\n{3,}")

# Producers often write the source file name or a placeholder into /Title; as a citation's title
# that is worse than none (callers fall back to the attachment's own name).
_FILENAME_TITLE = re.compile(
    r"\.(pdf|docx?|odt|odp|ods|pptx?|xlsx?|rtf|txt|tex|dvi|ps|indd|html?|md|jpe?g|png|tiff?|wpd)$",
    re.IGNORECASE,
)
_PLACEHOLDER_TITLES = {"untitled", "untitled document", "title", "document"}


class PdfExtractor(Extractor):
    """Text layer of each page; pages without one are listed for OCR instead of indexed empty."""

    name = "pdf"

    def score(self, mime: str, filename: str) -> int:
        if mime in PDF_MIMES:
            return 10
        return 5 if extension(filename) == "pdf" else 0

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
        with PDFIUM_LOCK:
            try:
                document = pdfium.PdfDocument(data)
            except pdfium.PdfiumError as error:
                raise _load_error(error, filename) from None
            with closing(document):
                try:
                    return _read(document, CharBudget(limits))
                except PipelineError:
                    raise
                except Exception as error:  # a native library fails in many ways; none may escape
                    raise PipelineError("PDF_CORRUPT", f"{filename[:200]}: {error}") from error


def _load_error(error: pdfium.PdfiumError, filename: str) -> PipelineError:
    """Classify PDFium's load failure: a password or security handler, or unreadable bytes."""
    if getattr(error, "err_code", None) in (pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY):
        return PipelineError("PDF_ENCRYPTED", f"{filename[:200]} is encrypted and needs a password")
    return PipelineError("PDF_CORRUPT", f"{filename[:200]} is not a readable PDF ({error})")


def _read(document: pdfium.PdfDocument, budget: CharBudget) -> Extraction:
    """Every page's text with its physical number and printed label, without running headers and
    footers (pipeline.extractors.page_furniture), its reference list marked
    (pipeline.extractors.reference_lists); close each page at once.

    The page count is the page tree's own claim, so a tree claiming 200,000 pages is refused
    before any page is loaded; a page is read only up to the per-page cap.
    """
    texts: dict[int, str] = {}
    needing_ocr: list[int] = []
    page_count = len(document)
    budget.check_pages(page_count)
    for index in range(page_count):
        with closing(document[index]) as page, closing(page.get_textpage()) as textpage:
            wanted = budget.page_chars(index + 1, textpage.count_chars())
            text = clean_page_text(textpage.get_text_range(0, wanted)) if wanted else ""
        budget.spend(len(text))
        if text:
            texts[index + 1] = text
        else:
            needing_ocr.append(index + 1)
    clean = remove_running_lines(texts)
    defined_labels = {number: document.get_page_label(number - 1) for number in clean.texts}
    labels = defined_labels if any(defined_labels.values()) else clean.labels
    segments = mark_reference_lists([
        Segment(text=text, locator={"page": number, **({"page_label": labels[number]} if labels.get(number) else {})})
        for number, text in clean.texts.items()
        if text
    ])
    return Extraction(
        mime="application/pdf",
        segments=segments,
        title=_title(document),
        page_count=page_count,
        pages_needing_ocr=needing_ocr,
        truncated_pages=budget.truncated_pages,
    )


def clean_page_text(raw: str) -> str:
    """Normalise PDFium page text: newlines, marked hyphens, control characters, blank runs.

    A marked hyphen is dropped only before a lower-case letter ("imple-mented"); before anything
    else it stays a hyphen ("Schwarz-Weiß"), because guessing wrong would corrupt names and
    compounds. Hyphens PDFium did not mark are left alone for the same reason.
    """
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    text = _MARKED_HYPHEN.sub(_resolve_hyphen, text)
    text = _CONTROL.sub("", text)
    text = _TRAILING_SPACE.sub("\n", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


def _resolve_hyphen(match: re.Match[str]) -> str:
    following = match.group(1)
    return following if following.islower() else "-" + following


def _title(document: pdfium.PdfDocument) -> str | None:
    """The document's /Title unless it is empty, a file name or a placeholder."""
    title = " ".join(document.get_metadata_dict().get("Title", "").split())
    if not title or _FILENAME_TITLE.search(title) or title.lower() in _PLACEHOLDER_TITLES:
        return None
    return title[:500]
