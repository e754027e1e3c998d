"""What every request and task needs, built once per process by the app factory."""
from __future__ import annotations

import logging

from dataclasses import dataclass, field
from functools import cached_property

from flask import current_app

from app.api.ws_slots import SocketSlots
from app.config import Settings
from app.cooperative import let_waiting_requests_run
from app.metrics import SEARCH
from app.ratelimit import RateLimiter
from app.services.recent_checks import RecentChecks
from app.services.turn_locks import TurnLocks
from pipeline.analysis.llm import LLMAnalysisEngine
from pipeline.analysis.offline import OfflineEngine
from pipeline.analysis.types import AnalysisEngine
from pipeline.answering.extractive import ExtractiveEngine
from pipeline.answering.llm import OpenAICompatibleEngine
from pipeline.answering.types import AnswerEngine
from pipeline.catalogue import Catalogue
from pipeline.embedder import Embedder, cosine_similarity, embedder_from_name
from pipeline.fetch import FetchPolicy
from pipeline.knowledge.concept_llm import LLMConceptEngine
from pipeline.knowledge.concepts import ConceptEngine, OfflineConceptEngine
from pipeline.knowledge.llm import LLMNoteWriter
from pipeline.knowledge.offline import OfflineNoteWriter
from pipeline.knowledge.types import NoteWriter
from pipeline.streaming.limits import StreamLimits
from pipeline.types import PipelineError
from storage.blobs import BlobStore
from storage.db import Database
from storage.extractions import ExtractionStore
from storage.retention import Released
from storage.retrieval import Retriever
from storage.spool import EvidenceSpool
from storage.vector_cache import VectorCache
from storage.vector_files import VectorFiles
from tasks.internal_api import InternalApi

log = logging.getLogger(__name__)


@dataclass
class Services:
    settings: Settings
    db: Database = field(init=False)

    def __post_init__(self) -> None:
        self.db = Database(self.settings.database_path)

    @cached_property
    def limiter(self) -> RateLimiter:
        return RateLimiter(self.settings, self.db)

    @cached_property
    def blobs(self) -> BlobStore:
        return BlobStore(self.settings.local_data / "blobs")

    @cached_property
    def spool(self) -> EvidenceSpool:
        return EvidenceSpool(self.settings.spool_dir)

    @cached_property
    def extractions(self) -> ExtractionStore:
        return ExtractionStore(self.settings.system_dir / "extractions")

    @cached_property
    def catalogue(self) -> Catalogue:
        return Catalogue(self.settings.vault_path, allowlist=self.settings.url_allowlist)

    @cached_property
    def embedder(self) -> Embedder:
        return embedder_from_name(self.settings.embedder)

    @cached_property
    def retriever(self) -> Retriever:
        """One per process: its vector cache is shared by every request and bounded in bytes."""
        cache = VectorCache(self.settings.vector_cache_bytes, loader=self.vector_files.load)
        return Retriever(
            self.embedder, cache, observe=SEARCH.observe, lexical_files=self.vector_files.lexical_packs,
            between_phases=let_waiting_requests_run,
        )

    @cached_property
    def vector_files(self) -> VectorFiles:
        return VectorFiles(self.settings.system_dir / "vectors", self.settings.vector_index_min_chunks)

    @cached_property
    def recent_checks(self) -> RecentChecks:
        return RecentChecks(self.settings.change_check_seconds)

    @cached_property
    def fetch_policy(self) -> FetchPolicy:
        return FetchPolicy(
            max_bytes=self.settings.fetch_max_bytes,
            timeout_s=self.settings.fetch_timeout_seconds,
            allowlist=self.settings.url_allowlist,
        )

    @cached_property
    def stream_limits(self) -> StreamLimits:
        settings = self.settings
        return StreamLimits(
            max_bytes=settings.attachment_max_bytes,
            timeout_s=settings.media_download_timeout_seconds,
            max_seconds=settings.extract_limits.speech.max_seconds,
            use_subtitles=settings.media_subtitles == "site",
        )

    @cached_property
    def socket_slots(self) -> SocketSlots:
        """Shared by the host's web processes through files (so are the turn locks)."""
        settings = self.settings
        return SocketSlots(settings.system_dir / "web" / "sockets", settings.ws_max_sockets, settings.ws_sockets_per_user)

    @cached_property
    def turn_locks(self) -> TurnLocks:
        return TurnLocks(self.settings.system_dir / "web" / "turns")

    @cached_property
    def shared_secret(self) -> str:
        """Read once per process: the generated token never changes while the instance runs."""
        return self.settings.shared_secret()

    @cached_property
    def internal_api(self) -> InternalApi:
        """Created on first use, so a forked worker child builds its own connection pool."""
        settings = self.settings
        return InternalApi(settings.internal_base_url, self.shared_secret, settings.attachment_max_bytes)

    def release(self, released: Released) -> None:
        """Delete the attachment copies and cached extractions ``released`` names that no source
        row uses any more: after the transaction that deleted their sources has committed."""
        if not (released.content_hashes or released.extraction_keys):
            return
        try:
            with self.db.reader() as session:
                self.blobs.delete_unreferenced(session, set(released.content_hashes))
                self.extractions.delete_unreferenced(session, set(released.extraction_keys))
        except OSError:  # what was asked is done; a file left over costs only disk
            log.exception("could not delete released attachment copies or extractions")

    @cached_property
    def answer_engine(self) -> AnswerEngine:
        """The LLM engine when an OpenAI-compatible endpoint is configured, else the offline one."""
        settings = self.settings
        if settings.llm_base_url:
            return OpenAICompatibleEngine(settings.llm_base_url, settings.llm_model, settings.llm_api_key)
        embedder = self.embedder
        return ExtractiveEngine(similarity=cosine_similarity(embedder) if embedder.semantic else None)

    @cached_property
    def concept_engine(self) -> ConceptEngine:
        """What decides merges and writes modules: the configured model (chat's choice), else the
        offline engine (from shared key terms). Either way code checks what it decides."""
        settings = self.settings
        if settings.llm_base_url:
            return LLMConceptEngine(settings.llm_base_url, settings.llm_model, settings.llm_api_key, timeout=self._model_deadline)
        return OfflineConceptEngine()

    @property
    def model_name(self) -> str | None:
        """``openai-compatible/<model>`` when a model is configured: what an analysis or a
        knowledge job started now is written by (chat's choice), named with the model."""
        settings = self.settings
        return f"{LLMAnalysisEngine.name}/{settings.llm_model}" if settings.llm_base_url else None

    @property
    def analysis_engine_name(self) -> str:
        return self.model_name or OfflineEngine.name

    @property
    def note_writer_name(self) -> str:
        return self.model_name or OfflineNoteWriter.name

    def analysis_engine(self, name: str) -> AnalysisEngine:
        """The engine an analysis was started with: its steps keep writing the way it began, so a
        result is never half one model's."""
        if name == OfflineEngine.name:
            return OfflineEngine()
        settings = self._model_settings(name, "analysis")
        return LLMAnalysisEngine(settings.llm_base_url, settings.llm_model, settings.llm_api_key, timeout=self._model_deadline)

    def note_writer(self, name: str) -> NoteWriter:
        """The writer a knowledge job was started with: a source note is never half one model's."""
        if name == OfflineNoteWriter.name:
            return OfflineNoteWriter()
        settings = self._model_settings(name, "knowledge job")
        return LLMNoteWriter(settings.llm_base_url, settings.llm_model, settings.llm_api_key, timeout=self._model_deadline)

    def _model_settings(self, name: str, what: str) -> Settings:
        """The settings when they still name the model ``name`` says; work begun with a model the
        settings no longer name fails rather than switching."""
        if name != self.model_name:
            raise PipelineError("LLM_NOT_CONFIGURED", f"This {what} was started with {name}, which this worker's settings do not name.")
        return self.settings

    @property
    def _model_deadline(self) -> float:
        """A model request must end within most of a lease, or the sweeper would resend its
        message while it runs."""
        return min(240.0, 0.8 * self.settings.job_lease_seconds)


def services() -> Services:
    return current_app.extensions["gnosi"]
