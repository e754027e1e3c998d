"""The gnosi-cite navigation contract: one stable link per citation, ``gnosi-cite://<notebook>/
<revision>/<chunk>``, naming the pinned revision the passage was cited from.

The link says *what* was cited, never *where* a server shows it, so it stays valid across
refreshes (the revision is pinned and kept while a message cites it), host names and dashboard
changes. The dashboard and REST clients resolve it through the authorized evidence endpoint
(``/api/citations/resolve``). Links that earlier versions stored (the JSON evidence API's path,
the dashboard's evidence page) are read as the same target, so old conversations gain the same
navigation without reindexing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

SCHEME = "gnosi-cite"
_ID = r"[A-Za-z0-9_-]{1,128}"
_CITE = re.compile(rf"^{SCHEME}://(?P<notebook>{_ID})/(?P<revision>{_ID})/(?P<chunk>{_ID})$")
# Where earlier versions pointed a citation: /api/notebooks/<nb>/evidence/<chunk>?revision=<rev>
# (the JSON evidence API, until 2026-12) and /notebooks/<nb>/evidence/<chunk>?revision=<rev>.
_LEGACY_PATH = re.compile(rf"^(?:/api)?/notebooks/(?P<notebook>{_ID})/evidence/(?P<chunk>{_ID})$")
_REVISION = re.compile(rf"^{_ID}$")


@dataclass(frozen=True)
class CiteTarget:
    notebook_id: str
    revision_id: str
    chunk_id: str

    @property
    def link(self) -> str:
        return f"{SCHEME}://{self.notebook_id}/{self.revision_id}/{self.chunk_id}"


def parse_link(link: str) -> CiteTarget | None:
    """The target of a gnosi-cite link or of a legacy evidence link; None for anything else."""
    found = _CITE.match(link)
    if found:
        return CiteTarget(found["notebook"], found["revision"], found["chunk"])
    parts = urlsplit(link)
    legacy = _LEGACY_PATH.match(parts.path)
    revision = parse_qs(parts.query).get("revision", [""])[0]
    if legacy and _REVISION.match(revision) and parts.scheme in ("", "http", "https"):
        return CiteTarget(legacy["notebook"], revision, legacy["chunk"])
    return None


def is_legacy_evidence_link(link: str | None) -> bool:
    """An HTTP link to evidence in a form this version no longer writes (the JSON API's path)."""
    return bool(link) and urlsplit(link).path.startswith("/api/") and parse_link(link) is not None  # type: ignore[arg-type]
