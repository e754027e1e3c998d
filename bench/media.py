"""Speech models on the corpus recordings: real-time factor per model and worker count, and
word error rate.

Usage: .venv/bin/python bench/media.py [--models base,tiny.en] [--workers 1,2] [--repeat 3]

Each worker is a process of its own that decodes and transcribes the corpus recordings with
speech (one compute thread, as an extract worker's speech helper does); N workers share the
recordings out, so the real-time factor of N workers is the wall time of the round over the
seconds of sound all of them read (below 1: faster than the sound plays). Rounds interleave
the variants, and each figure is the median of ``--repeat`` rounds. Word error rate is against
the references in the corpus's audio/transcripts.json (the multilingual one is approximate).
"""
from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "tests")]

from support.speech_truth import recordings, word_error_rate  # noqa: E402

# The stereo clip speaks two sentences at once, one per channel: a mix cannot be scored.
_SKIPPED = {"stereo_diarization.wav"}


def _transcribe(job: tuple[str, list[str]]) -> list[tuple[str, float, str]]:
    """In a worker process: each recording's length and transcript."""
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from pipeline.extractors.limits import ExtractLimits
    from pipeline.speech.audio import decode_speech
    from pipeline.speech.transcribing import read_window

    model, paths = job
    read: list[tuple[str, float, str]] = []
    for path in paths:
        audio = decode_speech(Path(path).read_bytes(), max_seconds=ExtractLimits().speech.max_seconds)
        words = [text for start, end in audio.windows for _, _, text in read_window(model, audio.window(start, end))[1]]
        read.append((path, audio.duration, " ".join(words)))
    return read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="base,tiny.en")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from pipeline.speech.models import missing

    models = [name for name in args.models.split(",") if not missing(name)]
    for name in set(args.models.split(",")) - set(models):
        print(f"skipped {name}: {missing(name)}")
    counts = [int(count) for count in args.workers.split(",")]
    clips = [r for r in recordings() if r.path.name not in _SKIPPED]
    variants = [(model, count) for model in models for count in counts]
    factors: dict[tuple[str, int], list[float]] = {variant: [] for variant in variants}
    errors: dict[tuple[str, str], float] = {}
    context = multiprocessing.get_context("spawn")
    for round_ in range(args.repeat):
        for model, count in variants[round_ % len(variants):] + variants[:round_ % len(variants)]:
            # every worker reads every clip once, so N workers read N times the sound
            jobs = [(model, [str(clip.path) for clip in clips]) for _ in range(count)]
            with context.Pool(count) as pool:
                pool.map(_warm, [model] * count)
                started = time.perf_counter()
                results = pool.map(_transcribe, jobs)
                wall = time.perf_counter() - started
            sound = sum(duration for result in results for _, duration, _ in result)
            factors[(model, count)].append(wall / sound)
            for path, _, text in results[0]:
                reference = next(clip.reference for clip in clips if str(clip.path) == path)
                errors[(model, Path(path).name)] = word_error_rate(reference, text)
    seconds = sum(clip_seconds for clip_seconds in (_length(clip.path) for clip in clips))
    print(f"\nSpeech, {len(clips)} corpus recordings ({seconds:.0f} s of sound), one thread per worker, median of {args.repeat}\n")
    print("| model | workers | real-time factor | sound s per wall s |")
    print("|---|---|---|---|")
    for model, count in variants:
        factor = statistics.median(factors[(model, count)])
        print(f"| {model} | {count} | {factor:.3f} | {1 / factor:.1f} |")
    print("\n| recording | " + " | ".join(f"WER {model}" for model in models) + " |")
    print("|---|" + "---|" * len(models))
    for clip in clips:
        print(f"| {clip.path.name}{'' if clip.exact else ' (approx. ref.)'} | "
              + " | ".join(f"{errors[(model, clip.path.name)]:.3f}" for model in models) + " |")


def _warm(model: str) -> None:
    from pipeline.speech.models import whisper

    whisper(model)


def _length(path: Path) -> float:
    from pipeline.speech.audio import decode_speech

    return decode_speech(path.read_bytes(), max_seconds=10_800).duration


if __name__ == "__main__":
    main()
