"""What a long extraction tells its job as it goes: the page OCR is reading, how far a
transcript has come. Each report also keeps the job's lease and is where a cancel takes effect."""
from __future__ import annotations

import logging

from app.extensions import services
from pipeline.types import PipelineError
from tasks.internal_api import InternalApiUnavailable

log = logging.getLogger(__name__)


def reading_page(job_id: str, source_id: str, page: int, position: int, pages: int) -> None:
    """Before each page OCR reads (seconds each): show which."""
    _working(job_id, source_id, f"OCR: page {page} ({position} of {pages})")


def hearing(job_id: str, source_id: str, done_seconds: float, total_seconds: float) -> None:
    """Before each window of speech is transcribed (up to 30 s of sound): show how far it is."""
    _working(job_id, source_id, f"Transcribing: {_clock(done_seconds)} of {_clock(total_seconds)}")


def downloading(job_id: str, source_id: str, done_bytes: int, total_bytes: int | None) -> None:
    """Every few seconds while a recording downloads from its site: show how much has come."""
    of_total = f" of {_megabytes(total_bytes)}" if total_bytes else ""
    _working(job_id, source_id, f"Downloading the recording: {_megabytes(done_bytes)}{of_total}")


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:,.1f} MB"


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}" if minutes >= 60 else f"{minutes}:{seconds:02d}"


def _working(job_id: str, source_id: str, activity: str) -> None:
    """Show what a long extraction is doing (and keep the job's lease), and stop here when the
    job was cancelled. An instance that does not answer costs the report, not the work: the next
    step asks again."""
    log.info("%s", activity)
    try:
        state = services().internal_api.report_activity(job_id, source_id, activity)
    except InternalApiUnavailable as error:  # progress only: what was read so far is not thrown away for it
        log.warning("could not report %r: %s", activity, error)
        return
    if state != "running":
        raise PipelineError("JOB_CANCELLED", f"stopped before {activity}")
