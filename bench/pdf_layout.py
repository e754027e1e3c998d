"""What line boxes and tables cost a PDF's extraction, and what they find, on the corpus PDFs.

Usage: .venv/bin/python bench/pdf_layout.py [--rounds 5] [names of files in corpus/pdf ...]

Each round extracts every PDF twice, with tables searched (``max_table_pages`` 200, the default)
and without (0), in an order that alternates, so a slow spell of a shared machine lands on both.
Prints per PDF: pages, median milliseconds of each variant, tables found, table rows, and the
share of text lines that carry a box. Line boxes cannot be turned off; compare against an older
checkout for their cost (docs/decisions/0015 has both).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

from pipeline.extractors.limits import ExtractLimits  # noqa: E402
from pipeline.extractors.pdf import PdfExtractor  # noqa: E402
from pipeline.line_boxes import LINES  # noqa: E402
from pipeline.types import Extraction  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "pdf"
DEFAULT = (
    "dmca.pdf", "federal-register-2020-17221.pdf", "GeoTopo-komprimiert.pdf", "i1040nr.pdf", "tracemonkey.pdf",
    "naacl06-shinyama.pdf", "nics-background-checks-2015-11.pdf", "ca-warn-report.pdf", "tableformer-2203.00274.pdf",
)


def _extract(data: bytes, name: str, limits: ExtractLimits) -> tuple[float, Extraction]:
    started = time.perf_counter()
    extraction = PdfExtractor().extract(data, filename=name, mime="application/pdf", limits=limits)
    return (time.perf_counter() - started) * 1000, extraction


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("names", nargs="*", default=list(DEFAULT))
    args = parser.parse_args()
    variants = {"tables": ExtractLimits(), "no tables": replace(ExtractLimits(), max_table_pages=0)}
    print(f"| PDF | pages | ms with tables | ms without | tables | rows | lines with a box |")
    print("|---|---|---|---|---|---|---|")
    for name in args.names:
        data = (CORPUS / name).read_bytes()
        times: dict[str, list[float]] = {variant: [] for variant in variants}
        extraction: Extraction | None = None
        for round_number in range(args.rounds):
            order = list(variants) if round_number % 2 == 0 else list(reversed(variants))
            for variant in order:
                elapsed, result = _extract(data, name, variants[variant])
                times[variant].append(elapsed)
                if variant == "tables":
                    extraction = result
        assert extraction is not None
        tables = [segment for segment in extraction.segments if "table" in segment.locator]
        text = [segment for segment in extraction.segments if "table" not in segment.locator]
        lines = sum(len([line for line in segment.text.split("\n") if line.strip()]) for segment in text)
        boxed = sum(len(segment.locator.get(LINES, [])) for segment in text)
        rows = sum(len(segment.locator[LINES]) for segment in tables)
        print(
            f"| {name} | {extraction.page_count} | {statistics.median(times['tables']):.0f} "
            f"| {statistics.median(times['no tables']):.0f} | {len(tables)} | {rows} | {boxed / max(lines, 1):.3f} |"
        )


if __name__ == "__main__":
    main()
