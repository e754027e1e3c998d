"""OCR engines on the corpus pages with known text: seconds per page and character accuracy.

Usage: OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/ocr.py [--engines tesseract,easyocr] [--repeat 1] [--dpi 300]

Each engine runs in this process with one compute thread (as in a worker's OCR helper); pages
are rendered once (PDF pages at ``--dpi``, image files as stored) and every round sends each page
to the engines in an order that rotates, so a slow spell of a shared machine lands on all. CPU
time counts the tesseract processes too. Prints per-page medians, then per engine: the time to
start it, pages per second, median seconds per page, and mean character accuracy. The device is
the CPU unless torch sees a GPU (easyocr then uses it; tesseract never does).
"""
from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "tests")]

from pipeline.ocr.engines import OcrEngine, engine, missing  # noqa: E402
from pipeline.ocr.page_images import page_image  # noqa: E402
from support.ocr_truth import character_accuracy, truth_pages  # noqa: E402

MAX_PIXELS = 40_000_000


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _device() -> str:
    try:
        import torch
    except ImportError:
        return "cpu"
    return f"cuda ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else "cpu"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="tesseract,easyocr")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--dpi", type=int, default=300)
    args = parser.parse_args()

    names = [name for name in args.engines.split(",") if not missing(name)]
    for name in set(args.engines.split(",")) - set(names):
        print(f"skipped {name}: {missing(name)}")
    started: dict[str, float] = {}
    engines: dict[str, OcrEngine] = {}
    for name in names:
        begin = time.perf_counter()
        engines[name] = engine(name)
        started[name] = time.perf_counter() - begin
    pages = truth_pages()
    images = [page_image(page.path.read_bytes(), page.mime, page.page, dpi=args.dpi, max_pixels=MAX_PIXELS) for page in pages]

    seconds: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    accuracy: dict[tuple[str, str], float] = {}
    rotations: dict[tuple[str, str], int] = {}
    print(f"\nOCR per page, {args.dpi} dpi, device {_device()}, median of {args.repeat}\n")
    print("| page | pixels | engine | s/page | CPU s | rotation | char. accuracy |")
    print("|---|---|---|---|---|---|---|")
    for index, (page, image) in enumerate(zip(pages, images)):
        for round_ in range(args.repeat):
            order = names[(index + round_) % len(names):] + names[:(index + round_) % len(names)]
            for name in order:
                wall, clock = time.perf_counter(), _cpu()
                read = engines[name].read(image, timeout_seconds=600)
                seconds.setdefault((page.name, name), []).append(time.perf_counter() - wall)
                cpu.setdefault((page.name, name), []).append(_cpu() - clock)
                accuracy[(page.name, name)] = character_accuracy(read.text, page.truth)
                rotations[(page.name, name)] = read.rotation
        for name in names:
            key = (page.name, name)
            print(
                f"| {page.name} | {image.shape[1]}x{image.shape[0]} | {name} | {statistics.median(seconds[key]):.1f} "
                f"| {statistics.median(cpu[key]):.1f} | {rotations[key]} | {accuracy[key]:.3f} |",
                flush=True,
            )

    print("\n| engine | start s | pages/s | median s/page | mean char. accuracy |")
    print("|---|---|---|---|---|")
    for name in names:
        per_page = [statistics.median(seconds[(page.name, name)]) for page in pages]
        mean_accuracy = statistics.fmean(accuracy[(page.name, name)] for page in pages)
        print(
            f"| {name} | {started[name]:.1f} | {len(pages) / sum(per_page):.3f} | {statistics.median(per_page):.1f} "
            f"| {mean_accuracy:.3f} |"
        )


if __name__ == "__main__":
    main()
