"""A notebook's concepts, the change events they follow, and its knowledge trees (issue #20).

Concepts are read, never written here: they follow their sources through the events
(``tasks.knowledge.event``). Trees are arranged by people (editors and admins); a concept that is
republished gives every tree showing it a new snapshot by itself.
"""
from __future__ import annotations

from flask import Blueprint
from sqlalchemy import select

from app.api.access import visible_notebook
from app.auth import current_principal
from app.errors import ApiError
from app.extensions import services
from app.http import json_object, paging, refuse_unknown_fields, string_field
from app.services import knowledge_access as access
from app.services.knowledge_concept_view import concept_json, concept_summaries, event_json, tree_json
from pipeline.knowledge.trees import MAX_TITLE_CHARS, TreeError, checked_nodes
from storage.knowledge import events, trees
from storage.knowledge.counts import count_in_notebook
from storage.models import KnowledgeConcept, KnowledgeEvent, KnowledgeTree, in_notebook

bp = Blueprint("knowledge_concepts", __name__, url_prefix="/api/notebooks/<notebook_id>/knowledge")


@bp.get("/concepts")
def concepts_listed(notebook_id: str):  # type: ignore[no-untyped-def]
    page = paging(default_per_page=50, max_per_page=200)
    with services().db.reader() as session:
        notebook = visible_notebook(session, current_principal(), notebook_id)
        found = session.scalars(select(KnowledgeConcept).where(in_notebook(KnowledgeConcept, notebook))
                                .order_by(KnowledgeConcept.created_at, KnowledgeConcept.id).limit(page.per_page).offset(page.offset))
        return page.shown(concept_summaries(session, list(found)), count_in_notebook(session, KnowledgeConcept, notebook))


@bp.get("/concepts/<concept_id>")
def read_concept(notebook_id: str, concept_id: str):  # type: ignore[no-untyped-def]
    with services().db.reader() as session:
        notebook = visible_notebook(session, current_principal(), notebook_id)
        concept = session.scalar(select(KnowledgeConcept).where(in_notebook(KnowledgeConcept, notebook),
                                                                KnowledgeConcept.id == concept_id))
        if concept is None:
            raise ApiError(404, "CONCEPT_NOT_FOUND", "No such concept in this notebook.")
        return concept_json(session, notebook.id, concept)


@bp.get("/events")
def events_listed(notebook_id: str):  # type: ignore[no-untyped-def]
    page = paging(default_per_page=50, max_per_page=200)
    with services().db.reader() as session:
        notebook = visible_notebook(session, current_principal(), notebook_id)
        found = events.of_notebook(session, notebook, limit=page.per_page, offset=page.offset)
        return page.shown([event_json(event) for event in found], count_in_notebook(session, KnowledgeEvent, notebook))


@bp.get("/trees")
def trees_listed(notebook_id: str):  # type: ignore[no-untyped-def]
    with services().db.reader() as session:
        notebook = visible_notebook(session, current_principal(), notebook_id)
        return {"items": [tree_json(session, tree) for tree in trees.of_notebook(session, notebook)]}


@bp.post("/trees")
def create_tree(notebook_id: str):  # type: ignore[no-untyped-def]
    principal = current_principal()
    access.writer(principal)
    body = json_object()
    refuse_unknown_fields(body, ("title", "nodes"))
    title = string_field(body, "title", required=True, max_len=MAX_TITLE_CHARS)
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        tree = _arranged(lambda: trees.create(session, notebook, title, checked_nodes(body.get("nodes", []))))
        return tree_json(session, tree), 201


@bp.get("/trees/<tree_id>")
def read_tree(notebook_id: str, tree_id: str):  # type: ignore[no-untyped-def]
    with services().db.reader() as session:
        notebook = visible_notebook(session, current_principal(), notebook_id)
        return tree_json(session, _tree(session, notebook, tree_id))


@bp.put("/trees/<tree_id>")
def arrange_tree(notebook_id: str, tree_id: str):  # type: ignore[no-untyped-def]
    """A new arrangement of the version read (``expected_version_id``), or ``VERSION_CONFLICT``."""
    principal = current_principal()
    access.writer(principal)
    body = json_object()
    refuse_unknown_fields(body, ("expected_version_id", "nodes"))
    expected = string_field(body, "expected_version_id", required=True, max_len=32)
    with services().db.session() as session:
        notebook = visible_notebook(session, principal, notebook_id)
        tree = _tree(session, notebook, tree_id)
        if tree.active_version_id != expected:
            raise ApiError(409, "VERSION_CONFLICT", "The tree was arranged since you read it: read it again.",
                           current_version_id=tree.active_version_id)
        _arranged(lambda: trees.arrange(session, notebook, tree, checked_nodes(body.get("nodes"))))
        return tree_json(session, tree)


def _arranged(arrange):  # type: ignore[no-untyped-def]
    try:
        return arrange()
    except TreeError as err:
        raise ApiError(400, "TREE_INVALID", f"{str(err)[:1].upper()}{str(err)[1:]}.", field="nodes") from None


def _tree(session, notebook, tree_id: str) -> KnowledgeTree:  # type: ignore[no-untyped-def]
    tree = trees.get(session, notebook, tree_id)
    if tree is None:
        raise ApiError(404, "TREE_NOT_FOUND", "No such knowledge tree in this notebook.")
    return tree
