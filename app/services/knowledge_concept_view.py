"""Concepts, their modules and contributions, change events and trees as JSON.

A concept shows its active version's modules with their points, each point with the evidence it
quotes and the page that evidence opens, and every contribution with whether it counts now (the
validity rule of ``storage.knowledge.concepts``): a reader sees which source says what, and which
sources stopped counting.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import distinct, func, select
from sqlalchemy.orm import Session

from app.services.knowledge_view import evidence_json
from app.timestamps import iso
from storage.knowledge import concepts
from storage.models import (
    KnowledgeConcept,
    KnowledgeConceptVersion,
    KnowledgeContribution,
    KnowledgeEvent,
    KnowledgeModule,
    KnowledgeModuleVersion,
    KnowledgeNote,
    KnowledgeSourceVersion,
    KnowledgeTree,
    KnowledgeTreeVersion,
)


def concept_summaries(session: Session, listed: list[KnowledgeConcept]) -> list[dict[str, Any]]:
    """Concepts with their active version, modules and how many source versions feed them, in a
    fixed number of queries however many concepts there are."""
    ids = [c.id for c in listed]
    versions = {v.id: v for v in session.scalars(select(KnowledgeConceptVersion).where(
        KnowledgeConceptVersion.id.in_([c.active_version_id for c in listed if c.active_version_id])))}
    modules: dict[str, list[KnowledgeModule]] = {concept_id: [] for concept_id in ids}
    for module in _modules(session, ids):
        modules[module.concept_id].append(module)
    fed = dict(session.execute(select(
        KnowledgeContribution.concept_id, func.count(distinct(KnowledgeContribution.source_version_id)),
    ).where(KnowledgeContribution.concept_id.in_(ids), KnowledgeContribution.state == "valid")
        .group_by(KnowledgeContribution.concept_id)).all())
    shown = []
    for concept in listed:
        version = versions.get(concept.active_version_id or "")
        shown.append({
            "id": concept.id, "name": concept.name, "aliases": concept.aliases, "state": concept.state,
            "created_at": iso(concept.created_at),
            "active_version": {"id": version.id, "number": version.number, "created_at": iso(version.created_at)} if version else None,
            "modules": [{"id": m.id, "key": m.key, "title": m.title, "state": m.state} for m in modules[concept.id]],
            "source_version_count": fed.get(concept.id, 0),
        })
    return shown


def concept_json(session: Session, notebook_id: str, concept: KnowledgeConcept) -> dict[str, Any]:
    """The concept with its modules' active bodies and every contribution."""
    shown = concept_summaries(session, [concept])[0]
    modules = _modules(session, [concept.id])
    versions = {v.module_id: v for v in session.scalars(select(KnowledgeModuleVersion).where(
        KnowledgeModuleVersion.id.in_([m.active_version_id for m in modules if m.active_version_id])))}
    counting = {c.contribution_id for m in modules for c in concepts.valid_contributions(session, m.id)}
    sources_of = _source_versions(session, [p["note_id"] for v in versions.values() for p in v.body])
    for module in shown["modules"]:
        version = versions.get(module["id"])
        module["version"] = {"id": version.id, "number": version.number, "contribution_ids": version.contribution_ids,
                             "points": [_point(notebook_id, point, sources_of) for point in version.body]} if version else None
    contributions = session.scalars(select(KnowledgeContribution).where(KnowledgeContribution.concept_id == concept.id)
                                    .order_by(KnowledgeContribution.created_at, KnowledgeContribution.id))
    shown["contributions"] = [
        {"id": c.id, "module_id": c.module_id, "note_id": c.note_id, "note_version_id": c.note_version_id,
         "source_version_id": c.source_version_id, "block_keys": c.block_keys, "decision": c.decision, "state": c.state,
         "counts": c.id in counting, "created_at": iso(c.created_at)}
        for c in contributions
    ]
    shown["versions"] = [{"id": v.id, "number": v.number, "module_version_ids": v.module_version_ids, "event_id": v.event_id,
                          "created_at": iso(v.created_at)}
                         for v in session.scalars(select(KnowledgeConceptVersion).where(
                             KnowledgeConceptVersion.concept_id == concept.id).order_by(KnowledgeConceptVersion.number))]
    return shown


def event_json(event: KnowledgeEvent) -> dict[str, Any]:
    return {"id": event.id, "kind": event.kind, "subject": event.subject, "state": event.state, "attempts": event.attempts,
            "result": event.result, "error": event.error, "created_at": iso(event.created_at),
            "finished_at": iso(event.finished_at)}


def tree_json(session: Session, tree: KnowledgeTree) -> dict[str, Any]:
    version = session.get(KnowledgeTreeVersion, tree.active_version_id) if tree.active_version_id else None
    names = dict(session.execute(select(KnowledgeConcept.id, KnowledgeConcept.name).where(KnowledgeConcept.id.in_(
        {n["concept_id"] for n in (version.nodes if version else []) if n["kind"] == "concept"}))).all())
    nodes = [{**node, "concept_name": names.get(node["concept_id"])} if node["kind"] == "concept" else node
             for node in (version.nodes if version else [])]
    return {"id": tree.id, "title": tree.title, "created_at": iso(tree.created_at),
            "version": {"id": version.id, "number": version.number, "created_at": iso(version.created_at)} if version else None,
            "nodes": nodes}


def _modules(session: Session, concept_ids: list[str]) -> list[KnowledgeModule]:
    query = select(KnowledgeModule).where(KnowledgeModule.concept_id.in_(concept_ids))
    return list(session.scalars(query.order_by(KnowledgeModule.created_at, KnowledgeModule.id)))


def _source_versions(session: Session, note_ids: list[str]) -> dict[str, KnowledgeSourceVersion]:
    rows = session.execute(select(KnowledgeNote.id, KnowledgeSourceVersion).join(
        KnowledgeSourceVersion, KnowledgeSourceVersion.id == KnowledgeNote.source_version_id).where(KnowledgeNote.id.in_(set(note_ids))))
    return {note_id: version for note_id, version in rows}


def _point(notebook_id: str, point: dict[str, Any], sources_of: dict[str, KnowledgeSourceVersion]) -> dict[str, Any]:
    version = sources_of.get(point["note_id"])
    evidence = [evidence_json(notebook_id, version, item, None) if version else {**item, "file_url": None}
                for item in point["evidence"]]
    return {**point, "evidence": evidence}
