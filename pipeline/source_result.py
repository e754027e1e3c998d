"""What processing one source came to, as the steps pass it on (a Celery payload) and the
coordinator stores it. Its own module because web processes read it too, and
``pipeline.source_processing`` loads every extractor and yt-dlp to do the processing itself."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.evidence_pack import Evidence


@dataclass
class SourceResult:
    """The outcome of processing one source. Its message form (a Celery payload) leaves the
    evidence out: that travels as a pack file (pipeline.evidence_pack).

    ``error_code``/``error`` say why a source failed or, on an extracted one, what was left out
    of it (``EXTRACT_PAGE_TRUNCATED``), so the reader sees that some text is missing.
    """

    source_id: str
    status: str  # "extracted" | "not_modified" | "error" | "cancelled"
    error_code: str | None = None
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    evidence: Evidence | None = None

    def to_message(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "status": self.status,
            "error_code": self.error_code,
            "error": self.error,
            "meta": self.meta,
        }

    @classmethod
    def from_message(cls, data: dict[str, Any], evidence: Evidence | None = None) -> "SourceResult":
        return cls(
            data["source_id"], data["status"], data.get("error_code"), data.get("error"),
            data.get("meta") or {}, evidence,
        )
