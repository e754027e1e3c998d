"""Settings read once from the environment, with the defaults the README documents.

Everything that varies between a laptop, CI and a fleet lives here, so the rest of the code
receives plain values instead of reading ``os.environ`` on its own.
"""
from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from pipeline.chunker import ChunkSettings
from pipeline.extractors.limits import ExtractLimits
from pipeline.ocr.settings import ENGINE_CHOICES, OcrSettings
from pipeline.analysis.batches import BatchBounds
from pipeline.analysis.offline import MIN_BATCH_CHARS
from pipeline.speech.settings import MODEL_CHOICES, SpeechSettings

# The extraction caps' and chunking defaults live with them (their modules say why).
# The embedded broker's URL scheme: kombu's SQLAlchemy transport with a cheaper poll
# (tasks.embedded_broker registers it).
EMBEDDED_BROKER_SCHEME = "gnosi-sqlite"
LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("info", "debug", "warning", "error")
_EXTRACT = ExtractLimits()
_OCR = OcrSettings()
_SPEECH = SpeechSettings()
_CHUNKS = ChunkSettings()


def _int(env: dict[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    return int(raw) if raw else default


def _choice(env: dict[str, str], name: str, choices: tuple[str, ...]) -> str:
    """The setting's value, one of ``choices`` (the first is the default)."""
    raw = env.get(name, "").strip().lower() or choices[0]
    if raw not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {raw!r}")
    return raw


def _speech_model(env: dict[str, str]) -> str:
    """GNOSI_SPEECH_MODEL: a packaged model's name, or the absolute path of a model folder."""
    raw = env.get("GNOSI_SPEECH_MODEL", "").strip()
    if raw.startswith("/"):
        return raw
    if raw.lower() in ("", *MODEL_CHOICES):
        return _choice(env, "GNOSI_SPEECH_MODEL", MODEL_CHOICES)
    raise ValueError(
        f"GNOSI_SPEECH_MODEL must be one of {', '.join(MODEL_CHOICES)} or the absolute path of a model folder, not {raw!r}"
    )


def _path(env: dict[str, str], name: str) -> Path | None:
    raw = env.get(name, "").strip()
    return Path(raw) if raw else None


def _csv(env: dict[str, str], name: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in env.get(name, "").split(",") if part.strip())


@dataclass(frozen=True)
class Settings:
    local_data: Path
    vault_path: Path
    references_table: str
    broker_url: str
    host: str = "127.0.0.1"
    port: int = 8000
    url_allowlist: tuple[str, ...] = ()
    url_refresh_ttl_seconds: int = 21600
    completed_revision_retention: int = 3
    audit_revision_retention: int = 20
    max_request_bytes: int = 1_000_000
    fetch_max_bytes: int = 50 * 1024 * 1024
    fetch_timeout_seconds: int = 30
    attachment_max_bytes: int = 200 * 1024 * 1024
    media_download_timeout_seconds: int = 1800
    media_subtitles: str = "site"
    evidence_max_bytes: int = 256 * 1024 * 1024
    embedder: str = "hashing"
    vector_cache_bytes: int = 512 * 1024 * 1024
    vector_index_min_chunks: int = 200_000
    internal_api_url: str = ""
    internal_token: str = ""
    job_lease_seconds: int = 300
    sweep_interval_seconds: int = 30
    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key: str = ""
    secret_key: str = ""
    cookie_secure: bool = False
    chat_turns_per_minute: int = 20
    refreshes_per_minute: int = 10
    opens_per_minute: int = 6
    change_check_seconds: int = 10
    extract_limits: ExtractLimits = _EXTRACT
    chunking: ChunkSettings = _CHUNKS
    job_max_attempts: int = 5
    analysis_batch: BatchBounds = BatchBounds()
    # A knowledge unit's size (pipeline.knowledge.plan): sections shorter merge, longer split.
    knowledge_unit_min_chars: int = 600
    knowledge_unit_max_chars: int = 4000
    # Whether publishing (and editing) notes feeds the concepts; deletions and restores always do.
    knowledge_auto_sync: bool = True
    ws_auth_seconds: int = 5
    ws_idle_seconds: int = 300
    ws_sockets_per_user: int = 8
    ws_max_sockets: int = 500
    web_connections: int = 1000
    web_processes: int = 2
    log_format: str = "text"
    log_level: str = "info"
    # Linked drive folders (docs/decisions/0020).
    sync_folder_roots: tuple[Path, ...] = ()
    drive_api_url: str = "https://www.googleapis.com"
    drive_token_url: str = "https://oauth2.googleapis.com/token"
    drive_service_account_file: Path | None = None
    sync_round_seconds: int = 60
    syncs_per_minute: int = 1

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> "Settings":
        env = dict(os.environ if env is None else env)
        local_data = Path(env.get("LOCAL_DATA") or ".local-data").expanduser().resolve()
        vault = Path(env.get("GNOSI_VAULT_PATH") or local_data / "vault").expanduser().resolve()
        return cls(
            local_data=local_data,
            vault_path=vault,
            references_table=env.get("GNOSI_REFERENCES_TABLE", "").strip(),
            broker_url=env.get("CELERY_BROKER_URL", "").strip(),
            host=env.get("GNOSI_HOST", "127.0.0.1"),
            port=_int(env, "GNOSI_PORT", 8000),
            url_allowlist=_csv(env, "GNOSI_URL_ALLOWLIST"),
            url_refresh_ttl_seconds=_int(env, "GNOSI_NOTEBOOK_URL_REFRESH_TTL_SECONDS", 21600),
            completed_revision_retention=_int(env, "GNOSI_NOTEBOOK_COMPLETED_REVISION_RETENTION", 3),
            audit_revision_retention=_int(env, "GNOSI_NOTEBOOK_AUDIT_REVISION_RETENTION", 20),
            fetch_max_bytes=_int(env, "GNOSI_FETCH_MAX_BYTES", 50 * 1024 * 1024),
            fetch_timeout_seconds=_int(env, "GNOSI_FETCH_TIMEOUT_SECONDS", 30),
            attachment_max_bytes=_int(env, "GNOSI_ATTACHMENT_MAX_BYTES", 200 * 1024 * 1024),
            media_download_timeout_seconds=_int(env, "GNOSI_MEDIA_DOWNLOAD_TIMEOUT_SECONDS", 1800),
            media_subtitles=_choice(env, "GNOSI_MEDIA_SUBTITLES", ("site", "off")),
            evidence_max_bytes=_int(env, "GNOSI_EVIDENCE_MAX_BYTES", 256 * 1024 * 1024),
            embedder=env.get("GNOSI_EMBEDDER", "").strip() or "hashing",
            vector_cache_bytes=_int(env, "GNOSI_VECTOR_CACHE_MB", 512) * 1024 * 1024,
            vector_index_min_chunks=_int(env, "GNOSI_VECTOR_INDEX_MIN_CHUNKS", 200_000),
            internal_api_url=env.get("GNOSI_INTERNAL_API_URL", "").strip().rstrip("/"),
            internal_token=env.get("GNOSI_INTERNAL_TOKEN", "").strip(),
            job_lease_seconds=_int(env, "GNOSI_JOB_LEASE_SECONDS", 300),
            sweep_interval_seconds=_int(env, "GNOSI_SWEEP_INTERVAL_SECONDS", 30),
            llm_base_url=env.get("GNOSI_LLM_BASE_URL", "").strip().rstrip("/"),
            llm_model=env.get("GNOSI_LLM_MODEL", "").strip(),
            llm_api_key=env.get("GNOSI_LLM_API_KEY", "").strip(),
            secret_key=env.get("GNOSI_SECRET_KEY", "").strip(),
            cookie_secure=env.get("GNOSI_COOKIE_SECURE", "") == "1",
            chat_turns_per_minute=_int(env, "GNOSI_CHAT_TURNS_PER_MINUTE", 20),
            refreshes_per_minute=_int(env, "GNOSI_REFRESHES_PER_MINUTE", 10),
            opens_per_minute=_int(env, "GNOSI_OPENS_PER_MINUTE", 6),
            change_check_seconds=_int(env, "GNOSI_CHANGE_CHECK_SECONDS", 10),
            extract_limits=ExtractLimits(
                max_pages=_int(env, "GNOSI_EXTRACT_MAX_PAGES", _EXTRACT.max_pages),
                max_page_chars=_int(env, "GNOSI_EXTRACT_MAX_PAGE_CHARS", _EXTRACT.max_page_chars),
                max_chars=_int(env, "GNOSI_EXTRACT_MAX_CHARS", _EXTRACT.max_chars),
                memory_mb=_int(env, "GNOSI_EXTRACT_MEMORY_MB", _EXTRACT.memory_mb),
                timeout_seconds=_int(env, "GNOSI_EXTRACT_TIMEOUT_SECONDS", _EXTRACT.timeout_seconds),
                max_table_pages=_int(env, "GNOSI_EXTRACT_MAX_TABLE_PAGES", _EXTRACT.max_table_pages),
                ocr=OcrSettings(
                    engine=_choice(env, "GNOSI_OCR_ENGINE", ENGINE_CHOICES),
                    dpi=_int(env, "GNOSI_OCR_DPI", _OCR.dpi),
                    max_pixels=_int(env, "GNOSI_OCR_MAX_PIXELS", _OCR.max_pixels),
                    max_pages=_int(env, "GNOSI_OCR_MAX_PAGES", _OCR.max_pages),
                    page_timeout_seconds=_int(env, "GNOSI_OCR_PAGE_TIMEOUT_SECONDS", _OCR.page_timeout_seconds),
                    memory_mb=_int(env, "GNOSI_OCR_MEMORY_MB", _OCR.memory_mb),
                ),
                speech=SpeechSettings(
                    model=_speech_model(env),
                    max_seconds=_int(env, "GNOSI_SPEECH_MAX_SECONDS", _SPEECH.max_seconds),
                    window_timeout_seconds=_int(
                        env, "GNOSI_SPEECH_WINDOW_TIMEOUT_SECONDS", _SPEECH.window_timeout_seconds
                    ),
                    memory_mb=_int(env, "GNOSI_SPEECH_MEMORY_MB", _SPEECH.memory_mb),
                ),
            ),
            chunking=ChunkSettings(
                max_chars=_int(env, "GNOSI_CHUNK_MAX_CHARS", _CHUNKS.max_chars),
                overlap_chars=_int(env, "GNOSI_CHUNK_OVERLAP_CHARS", _CHUNKS.overlap_chars),
            ),
            job_max_attempts=_int(env, "GNOSI_JOB_MAX_ATTEMPTS", 5),
            analysis_batch=BatchBounds(
                max_items=_int(env, "GNOSI_ANALYSIS_BATCH_CHUNKS", BatchBounds.max_items),
                # A batch holds any one chunk, and two reduce summaries of the longest sentences.
                max_chars=max(
                    _int(env, "GNOSI_ANALYSIS_BATCH_CHARS", BatchBounds.max_chars),
                    _int(env, "GNOSI_CHUNK_MAX_CHARS", _CHUNKS.max_chars), MIN_BATCH_CHARS,
                ),
            ),
            knowledge_unit_min_chars=_int(env, "GNOSI_KNOWLEDGE_UNIT_MIN_CHARS", 600),
            knowledge_unit_max_chars=max(_int(env, "GNOSI_KNOWLEDGE_UNIT_MAX_CHARS", 4000), 1000),
            knowledge_auto_sync=env.get("GNOSI_KNOWLEDGE_AUTO_SYNC", "1") != "0",
            ws_auth_seconds=_int(env, "GNOSI_WS_AUTH_SECONDS", 5),
            ws_idle_seconds=_int(env, "GNOSI_WS_IDLE_SECONDS", 300),
            ws_sockets_per_user=_int(env, "GNOSI_WS_SOCKETS_PER_USER", 8),
            ws_max_sockets=_int(env, "GNOSI_WS_MAX_SOCKETS", 500),
            web_connections=_int(env, "GNOSI_WEB_CONNECTIONS", 1000),
            web_processes=_int(env, "GNOSI_WEB_PROCESSES", 2),
            log_format=_choice(env, "GNOSI_LOG_FORMAT", LOG_FORMATS),
            log_level=_choice(env, "GNOSI_LOG_LEVEL", LOG_LEVELS),
            sync_folder_roots=tuple(
                Path(part).resolve() for part in env.get("GNOSI_SYNC_FOLDER_ROOTS", "").split(os.pathsep) if part.strip()
            ),
            drive_api_url=env.get("GNOSI_DRIVE_API_URL", "").strip().rstrip("/") or cls.drive_api_url,
            drive_token_url=env.get("GNOSI_DRIVE_TOKEN_URL", "").strip() or cls.drive_token_url,
            drive_service_account_file=_path(env, "GNOSI_DRIVE_SERVICE_ACCOUNT_FILE"),
            sync_round_seconds=_int(env, "GNOSI_SYNC_ROUND_SECONDS", 60),
            syncs_per_minute=_int(env, "GNOSI_SYNCS_PER_MINUTE", 1),
        )

    @property
    def system_dir(self) -> Path:
        return self.local_data / "system"

    @property
    def spool_dir(self) -> Path:
        return self.system_dir / "spool"

    @property
    def database_path(self) -> Path:
        return self.system_dir / "notebooks.sqlite3"

    @property
    def database_url(self) -> str:
        return f"sqlite:///{self.database_path}"

    @property
    def embedded(self) -> bool:
        """True when no broker is configured: Celery then runs over a SQLite file (no server)."""
        return not self.broker_url

    @property
    def celery_broker_url(self) -> str:
        return self.broker_url or f"{EMBEDDED_BROKER_SCHEME}+sqlite:///{self.embedded_broker_path}"

    @property
    def embedded_broker_path(self) -> Path:
        return self.system_dir / "broker.sqlite3"

    @property
    def vault_hash(self) -> str:
        """Scope key of every row: rows of one vault are never visible from another."""
        return hashlib.sha256(str(self.vault_path).encode()).hexdigest()[:32]

    @property
    def references_table_id(self) -> str:
        """GNOSI_REFERENCES_TABLE, or the identity the first run scaffolded (see app/scaffold.py)."""
        if self.references_table:
            return self.references_table
        remembered = self.remembered_table_path
        return remembered.read_text().strip() if remembered.exists() else ""

    @property
    def remembered_table_path(self) -> Path:
        return self.system_dir / "references-table"

    @property
    def internal_base_url(self) -> str:
        """Where extract workers fetch source bytes and job state: the API instance."""
        if self.internal_api_url:
            return self.internal_api_url
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    def shared_secret(self) -> str:
        """The token that guards /internal: configured, or generated once under LOCAL_DATA.

        Workers on other machines get it through GNOSI_INTERNAL_TOKEN; processes on this machine
        read the same file, so the embedded default needs no configuration.
        """
        return self.internal_token or self._generated_secret("internal-token")

    def session_key(self) -> str:
        """Signs dashboard session cookies: GNOSI_SECRET_KEY, or generated once under LOCAL_DATA."""
        return self.secret_key or self._generated_secret("session-key")

    def _generated_secret(self, name: str) -> str:
        path = self.system_dir / name
        if not path.exists():
            self.ensure_dirs()
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:  # another process of this instance made it first
                return path.read_text().strip()
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(32))
        return path.read_text().strip()

    def ensure_dirs(self) -> None:
        """``system/`` holds the database, the broker file and the secrets: this account's only
        (tightened on every start, for instances created before it was)."""
        self.system_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.system_dir.chmod(0o700)
