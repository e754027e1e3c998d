"""Caps on what one source may cost to extract, and the character budget extractors spend.

A 51 KB PDF can hold 20 M characters, a 1 MB Flate stream inflates to gigabytes and a page tree
can claim 200,000 pages: bytes say little about the work they cause. These caps bound that work
where it is cheapest to check (the page count before any page is read, characters as each page is
read), and ``pipeline.sandbox`` bounds the memory and time of the decoder itself.

Whole-document caps refuse the source: indexing the first N pages of a longer document would let
questions about the rest end "no evidence" while the source looked complete. A single page beyond
the per-page cap is cut and the cut is reported, because such a page is generated filler or a data
dump and the rest of a real document stays worth citing.

Every refusal names its cap and the setting that raises it, so an operator can act on the message.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.ocr.settings import OcrSettings
from pipeline.speech.settings import SpeechSettings
from pipeline.types import PipelineError


@dataclass(frozen=True)
class ExtractLimits:
    """Per-source caps; the defaults are what the README documents (app/config.py reads them).

    5,000 pages and 20 M characters hold any real book (a dense 1,000-page book is 3-6 M) and keep
    one source's evidence pack near 62 MiB, far below ``GNOSI_EVIDENCE_MAX_BYTES``. A page of
    100,000 characters is ten times the densest page of the corpus (9,435) and twice a newspaper
    broadsheet. 1 GiB for the decoder is ten times what the largest inputs tried that were not
    bombs needed; 120 s is over 20x the few seconds a 1,000-page book takes here, and below the
    300 s job lease. A page that draws rulings or frames is searched for tables in a few
    milliseconds (pipeline.extractors.pdf_tables); 200 such pages hold the tables of any report
    and bound what a drawing-heavy book costs; a page beyond them keeps its tables as text.
    """

    max_pages: int = 5_000
    max_page_chars: int = 100_000
    max_chars: int = 20_000_000
    memory_mb: int = 1_024
    timeout_seconds: int = 120
    max_table_pages: int = 200
    ocr: OcrSettings = OcrSettings()
    speech: SpeechSettings = SpeechSettings()


@dataclass
class CharBudget:
    """The characters one extraction has produced so far, against ``limits``.

    An extractor asks ``page_chars`` how much of a page to read (so a page is never decoded into a
    string beyond the cap) and ``spend``s what it keeps; the budget raises the refusal itself so
    every extractor words it the same way.
    """

    limits: ExtractLimits
    used: int = 0
    truncated_pages: list[int] = field(default_factory=list)

    def check_pages(self, count: int) -> None:
        """Refuse a document whose page tree declares more pages than the cap, before reading any."""
        if count > self.limits.max_pages:
            raise PipelineError(
                "EXTRACT_TOO_MANY_PAGES",
                f"The document has {count:,} pages; at most {self.limits.max_pages:,} are read "
                "(raise GNOSI_EXTRACT_MAX_PAGES to index it).",
            )

    def page_chars(self, page: int, available: int) -> int:
        """How many of a page's ``available`` characters to read; records a cut page."""
        if available > self.limits.max_page_chars:
            self.truncated_pages.append(page)
            return self.limits.max_page_chars
        return available

    def check_encoded(self, size: int) -> None:
        """Refuse undecoded text that cannot fit: no charset we read spends more than 4 bytes on a
        character, so more bytes than 4x the cap always decode to more characters than it."""
        if size > 4 * self.limits.max_chars:
            self._too_large()

    def spend(self, chars: int) -> None:
        """Count characters kept; refuse the source as soon as it passes the cap."""
        self.used += chars
        if self.used > self.limits.max_chars:
            self._too_large()

    def _too_large(self) -> None:
        raise PipelineError(
            "EXTRACT_TOO_LARGE",
            f"The document holds more than {self.limits.max_chars:,} characters of text "
            "(raise GNOSI_EXTRACT_MAX_CHARS to index it).",
        )


def truncation_note(truncated_pages: list[int], limits: ExtractLimits) -> tuple[str, str] | None:
    """Code and bounded message telling a reader which pages were cut, or None when none was.

    It rides on an otherwise available source the way a failed refresh's reason rides on a stale
    one, so the sources panel shows it without a new column.
    """
    if not truncated_pages:
        return None
    shown = ", ".join(str(page) for page in truncated_pages[:10])
    more = ", …" if len(truncated_pages) > 10 else ""
    return (
        "EXTRACT_PAGE_TRUNCATED",
        f"{len(truncated_pages)} page(s) held more than {limits.max_page_chars:,} characters; only that many of each "
        f"were indexed (pages {shown}{more}; raise GNOSI_EXTRACT_MAX_PAGE_CHARS to read them whole).",
    )
