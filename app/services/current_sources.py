"""What a notebook's members hold right now, compared with its active revision."""
from __future__ import annotations

from dataclasses import replace

from app.extensions import Services
from pipeline.catalogue import AttachmentResolver, record_sources
from pipeline.fingerprint import observe_attachment
from pipeline.planning import Observed, PlannedSource, PreviousSource, SourceKey, key_of, plan_sources
from pipeline.types import PipelineError, SourceRef
from storage import linked
from storage.models import Notebook, utcnow


def observe_members(
    svc: Services, notebook: Notebook, member_ids: list[str], previous: dict[SourceKey, PreviousSource]
) -> list[Observed]:
    """Each member's attachment and URL values from the notebook's own table (not the current one),
    and the linked folders' documents as their last sync left them."""
    table = svc.catalogue.table(notebook.table_id)
    records = {r.resource_id: r for r in svc.catalogue.records(table) if not r.is_template}
    observed = _linked_documents(svc, notebook, member_ids)
    attachments = AttachmentResolver(svc.settings.vault_path)
    for resource_id in member_ids:
        record = records.get(resource_id)
        if record is None:
            continue
        for ref in record_sources(record, table, allowlist=svc.settings.url_allowlist):
            seen = Observed(ref)  # URLs are known only after a fetch; a bad path fails in extraction
            if ref.kind == "attachment":
                try:
                    path = attachments.resolve(ref.value)
                    seen = observe_attachment(path, ref, previous.get(key_of(ref)))
                except (PipelineError, OSError):
                    pass
            observed.append(replace(seen, resource_title=record.title))
    return observed


def _linked_documents(svc: Services, notebook: Notebook, member_ids: list[str]) -> list[Observed]:
    """A linked document's bytes were hashed when its sync downloaded them: nothing to read here."""
    wanted = {document_id for m in member_ids if (document_id := linked.document_id_of(m))}
    if not wanted:
        return []
    with svc.db.reader() as session:
        held = [d for d in linked.notebook_documents(session, notebook.id) if d.id in wanted and d.content_hash]
    return [
        Observed(
            SourceRef(linked.member_id(d.id), "linked", "linked", linked.source_value(d)),
            fingerprint=d.content_hash, file_size=d.size, resource_title=d.name,
        )
        for d in held
    ]


def plan(
    svc: Services,
    notebook: Notebook,
    member_ids: list[str],
    previous: dict[SourceKey, PreviousSource],
    force_resource_ids: frozenset[str] = frozenset(),
) -> list[PlannedSource]:
    return plan_sources(
        observe_members(svc, notebook, member_ids, previous),
        previous,
        now=utcnow(),
        url_ttl_seconds=svc.settings.url_refresh_ttl_seconds,
        chunking=svc.settings.chunking.recipe(svc.embedder.name),
        force_resource_ids=force_resource_ids,
    )
