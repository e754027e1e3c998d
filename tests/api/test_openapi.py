"""The OpenAPI document (app/api/openapi.yaml) is a valid OpenAPI 3.1 document, names exactly the
routes of ``app.url_map`` (operationId = Flask endpoint), and real responses match it: a tour of
the API exercises every operation with a success, the error tests several error shapes, and every
status, media type, documented header and JSON body (request and response) is checked against it.
Objects in the document refuse undocumented fields, so a new field fails here until described.
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
import shutil
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import jsonschema
import pytest
from flask import Flask
from openapi_spec_validator import OpenAPIV31SpecValidator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from simple_websocket import Client
from werkzeug.routing.exceptions import WebsocketMismatch
from werkzeug.serving import make_server

from app.api.openapi import load_document
from app.security import CONTENT_SECURITY_POLICY
from app.services.folder_sync import sync_folder
from storage import accounts, heartbeats, linked
from storage.models import Notebook
from support.signed_in import signed_in
from support.sse import parse_sse
from analysis_tour import analyses_errors, analyses_tour
from knowledge_tour import knowledge_notebook, knowledge_tour
from support_api import create_notebook, index, services_of
from test_internal import a_pack, running_draft, secret

DOC = load_document()
BASE = "urn:gnosi:openapi"
METHODS = ("get", "post", "put", "patch", "delete")
NO_BODY = {204, 304}


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def template_of(rule: str) -> str:
    """A Flask rule as an OpenAPI path: ``<path:resource_id>`` becomes ``{resource_id}``."""
    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule)


class Contract:
    """Finds the documented operation of a real request and checks the response against it."""

    def __init__(self, app: Flask, document: dict[str, Any] = DOC) -> None:
        self.app = app
        self.doc = document
        self.registry = Registry().with_resource(BASE, Resource.from_contents(document, default_specification=DRAFT202012))
        self.operations = {
            op["operationId"]: (path, method)
            for path, item in document["paths"].items() for method, op in item.items() if method in METHODS
        }
        self.seen: dict[str, set[int]] = defaultdict(set)

    def validate(self, instance: Any, pointer: str) -> None:
        validator = jsonschema.Draft202012Validator(
            {"$ref": f"{BASE}#{pointer}"}, registry=self.registry,
            format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
        )
        validator.validate(instance)

    def resolve(self, pointer: str) -> tuple[str, dict[str, Any]]:
        """The object at ``pointer``, following a Reference Object; (its pointer, it)."""
        node: Any = self.doc
        for token in pointer.strip("/").split("/"):
            node = node[token.replace("~1", "/").replace("~0", "~")]
        if "$ref" in node:
            return self.resolve(node["$ref"].removeprefix("#"))
        return pointer, node

    def operation(self, method: str, path: str) -> tuple[str, str, str]:
        adapter = self.app.url_map.bind("localhost")
        try:
            endpoint, _ = adapter.match(path, method=method)
        except WebsocketMismatch:  # a plain request to the websocket route (answered 400)
            endpoint, _ = adapter.match(path, method=method, websocket=True)
        return endpoint, *self.operations[endpoint]

    def record(self, operation_id: str, status: int) -> None:
        self.seen[operation_id].add(status)

    def check(self, response: Any, status: int | None = None, code: str | None = None) -> Any:
        """Check ``response`` against its operation (and, when given, the expected status and code)."""
        request = response.request
        endpoint, template, verb = self.operation(request.method, request.path)
        where = f"{request.method} {request.path} -> {response.status_code}"
        assert status is None or response.status_code == status, f"{where}: {response.get_data(as_text=True)[:500]}"
        base = f"/paths/{escape(template)}/{verb}"
        responses = self.doc["paths"][template][verb]["responses"]
        assert str(response.status_code) in responses, f"{where}: status not documented for {endpoint}"
        pointer, documented = self.resolve(f"{base}/responses/{response.status_code}")
        for header in documented.get("headers", {}):
            assert header in response.headers, f"{where}: documented header {header} missing"
        content = documented.get("content", {})
        if response.status_code in NO_BODY:
            assert not content and response.get_data() == b"", where
        elif content:
            self._check_body(response, content, pointer, where)
        if code is not None:
            assert response.get_json()["code"] == code, f"{where}: {response.get_json()}"
        if response.status_code < 300 and request.is_json:
            self.validate(sent_json(request), f"{base}/requestBody/content/application~1json/schema")
        self.record(endpoint, response.status_code)
        return response

    def _check_body(self, response: Any, content: dict[str, Any], pointer: str, where: str) -> None:
        mimetype = response.mimetype if response.mimetype in content else "*/*"
        assert mimetype in content, f"{where}: {response.mimetype} not documented"
        media = f"{pointer}/content/{escape(mimetype)}"
        if mimetype == "application/json":
            self.validate(response.get_json(), f"{media}/schema")
        elif mimetype == "text/event-stream":
            events = parse_sse(response.get_data(as_text=True))
            assert events and events[-1][0] in ("done", "error"), f"{where}: {events}"
            for name, data in events:
                assert name in content[mimetype]["x-events"], f"{where}: undocumented event {name}"
                self.validate(data, f"{media}/x-events/{name}")


def sent_json(request: Any) -> Any:
    """The JSON body a test client sent (the app has read the stream: read its buffer again)."""
    stream = request.environ["wsgi.input"]
    stream.seek(0)
    return json.loads(stream.read())


@pytest.fixture
def contract(world) -> Contract:  # type: ignore[no-untyped-def]
    return Contract(world.app)


@contextmanager
def served(app: Flask) -> Iterator[int]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()


def test_the_document_is_valid_openapi_3_1() -> None:
    errors = [f"{'/'.join(map(str, e.path))}: {e.message[:200]}" for e in OpenAPIV31SpecValidator(DOC).iter_errors()]
    assert errors == []
    assert DOC["openapi"].startswith("3.1")


def test_the_document_names_every_route_and_only_those(world) -> None:
    routes = {
        (template_of(rule.rule), method.lower(), rule.endpoint)
        for rule in world.app.url_map.iter_rules() for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    documented = {
        (path, method, op["operationId"])
        for path, item in DOC["paths"].items() for method, op in item.items() if method in METHODS
    }
    assert routes - documented == set(), "routes the document does not describe"
    assert documented - routes == set(), "documented operations that no route serves"
    assert any(path.startswith("/api/") for path, _, _ in routes)


def test_a_broken_document_fails_the_contract(world) -> None:
    """The check can fail: the same real response, against a document whose field type is wrong."""
    broken = copy.deepcopy(DOC)
    broken["components"]["schemas"]["NotebookFields"]["properties"]["resource_count"] = {"type": "string"}
    notebook_id = create_notebook(world, ["dmca"])
    response = world.call("GET", f"/api/notebooks/{notebook_id}")
    Contract(world.app).check(response, 200)
    with pytest.raises(jsonschema.ValidationError, match="is not of type 'string'"):
        Contract(world.app, broken).check(response, 200)


def test_a_tour_of_the_api_matches_the_document(world, contract: Contract) -> None:
    call, check = world.call, contract.check
    svc = services_of(world)
    # Probes, metrics and this document.
    check(world.client.get("/healthz"), 200)
    assert "coordinator" in check(world.client.get("/readyz"), 503, "NOT_READY").json["message"]
    with svc.db.session() as session:
        heartbeats.beat(session, heartbeats.COORDINATOR)
    check(world.client.get("/readyz"), 200)
    check(world.client.get("/metrics"), 200)
    etag = check(world.client.get("/api/openapi.json"), 200).headers["ETag"]
    check(world.client.get("/api/openapi.json", headers={"If-None-Match": etag}), 304)
    # A dashboard session: sign in, pages, who am I, sign out.
    browser = world.app.test_client()
    check(browser.get("/"), 302)
    check(browser.get("/notebooks"), 302)
    check(browser.get("/sign-in?next=/notebooks"), 200)
    csrf = check(browser.post("/api/session", json={"token": world.tokens["alice"]}), 200).json["csrf_token"]
    check(browser.get("/api/session"), 200)
    for page in ("/notebooks", "/notebooks/x", "/notebooks/x/evidence/ch_x?revision=r", f"/tables/{world.vault.table_id}"):
        check(browser.get(page), 200)
    check(browser.get("/static/css/app.css"), 200)
    # Catalogue, notebooks and settings (bearer token).
    check(call("GET", "/api/tables"), 200)
    check(call("GET", f"/api/tables/{world.vault.table_id}/records?q=a"), 200)
    notebook_id = check(call("POST", "/api/notebooks", json={
        "title": "Tour", "visibility": "workspace", "conversation_mode": "shared", "resource_ids": ["dmca"],
    }), 201).json["id"]
    check(call("GET", f"/api/notebooks/resources?notebook_id={notebook_id}"), 200)
    check(call("GET", "/api/notebooks?per_page=5"), 200)
    check(call("GET", f"/api/notebooks/{notebook_id}"), 200)
    check(call("GET", f"/api/notebooks/{notebook_id}?open=1"), 200)
    check(call("PATCH", f"/api/notebooks/{notebook_id}", json={"title": "Tour of the API"}), 200)
    revision_id = index(world, notebook_id)
    # Evidence: search, citations, the attachment's bytes.
    results = check(call("GET", f"/api/notebooks/{notebook_id}/search?q=copyright+infringement&limit=3"), 200).json
    hit = results["results"][0]
    evidence = check(call("GET", f"/api/notebooks/{notebook_id}/evidence/{hit['chunk_id']}?revision={revision_id}"), 200)
    assert check(call("GET", f"/api/citations/resolve?link={quote(hit['cite'])}"), 200).json == evidence.json
    legacy = f"/api/notebooks/{notebook_id}/evidence/{hit['chunk_id']}?revision={revision_id}#page=1"
    assert check(call("GET", f"/api/citations/resolve?link={quote(legacy)}"), 200).json == evidence.json
    check(call("GET", f"/api/citations/resolve?link={quote(hit['cite'])}", who="eve"), 404, "NOTEBOOK_NOT_FOUND")
    check(call("GET", f"/api/notebooks/{notebook_id}/sources/{hit['source_id']}/file?revision={revision_id}"), 200)
    check(call("GET", f"/api/notebooks/{notebook_id}/sources"), 200)
    # Chat over server-sent events, the transcript, context choices.
    check(call("POST", "/api/chat", json={"notebook_id": notebook_id, "message": "What is copyright infringement?"}), 200)
    transcript = check(call("GET", f"/api/notebooks/{notebook_id}/conversation"), 200).json
    assert [m["role"] for m in transcript["messages"]] == ["user", "assistant"]
    assert transcript["messages"][1]["citations"], transcript
    other_id = create_notebook(world, ["dmca"])
    index(world, other_id)
    chosen = check(call("GET", f"/api/notebooks/{notebook_id}/chat-sources"), 200).json
    assert chosen["notebooks"] and chosen["sources"]
    chat_over_websocket(world, contract, notebook_id)
    analyses_tour(world, contract, notebook_id)
    analyses_errors(world, contract, notebook_id)
    # The knowledge layer: two PDFs made source notes, their concepts, trees, edits, approvals.
    knowledge_tour(world, contract, knowledge_notebook(world, contract))
    check(call("DELETE", f"/api/notebooks/{notebook_id}/conversation"), 200)
    # Sources and jobs: add, cancel, refresh, retry, remove.
    check(call("POST", f"/api/notebooks/{notebook_id}/sources", json={"resource_ids": ["naacl"]}), 202)
    check(call("POST", f"/api/notebooks/{notebook_id}/refresh/cancel"), 202)
    check(call("POST", f"/api/notebooks/{notebook_id}/refresh"), 202)
    check(call("POST", f"/api/notebooks/{notebook_id}/sources/dmca/refresh"), 202)
    check(call("DELETE", f"/api/notebooks/{notebook_id}/sources/naacl"), 204)
    # Linked folders, the knowledge-base sync API and the caller's Drive authorisation.
    linked_folders_tour(world, contract, notebook_id)
    # What extract workers call.
    internal_tour(world, contract, hit["source_id"])
    # Clean up, as the browser and as the owner.
    check(browser.delete("/api/session", headers={"X-CSRF-Token": csrf}), 204)
    check(call("DELETE", f"/api/notebooks/{notebook_id}"), 204)
    docs_page_loads(world, contract)
    missing = sorted(op for op in contract.operations if not any(status < 400 for status in contract.seen[op]))
    assert missing == [], "documented operations the tour never exercised with a success"


def chat_over_websocket(world, contract: Contract, notebook_id: str) -> None:  # type: ignore[no-untyped-def]
    """The websocket route: every message the server sends matches its documented schema."""
    spec = DOC["paths"]["/api/chat/ws"]["get"]["x-websocket"]
    base = "/paths/~1api~1chat~1ws/get/x-websocket"
    with served(world.app) as port:
        ws = Client.connect(f"ws://127.0.0.1:{port}/api/chat/ws", headers=world.headers("alice"))
        try:
            contract.record("chat_ws", 101)
            sent = [{"type": "auth", "token": world.tokens["alice"]},
                    {"type": "turn", "notebook_id": notebook_id, "message": "What is a safe harbor?"}]
            names = []
            for message in sent:
                contract.validate(message, f"{base}/client-messages/{message['type']}")
                ws.send(json.dumps(message))
                while True:
                    received = json.loads(ws.receive(timeout=30))
                    contract.validate(received, f"{base}/envelope")
                    assert received["event"] in spec["server-messages"], received
                    contract.validate(received["data"], f"{base}/server-messages/{received['event']}")
                    names.append(received["event"])
                    if received["event"] in ("auth", "done", "error"):
                        break
            assert names[0] == "auth" and names[-1] == "done", names
        finally:
            ws.close()
    contract.check(world.client.get("/api/chat/ws"), 400, "BAD_REQUEST")


def take_the_minutes_slot(svc: Any, user_id: str) -> None:
    """Take the caller's one sync of this minute now, whatever the calls at a higher limit left:
    their slots were milliseconds apart, so on a slow machine the last could lapse between two
    refusals and let the second through (a flaky 200)."""
    while svc.limiter.wait("sync", user_id):
        time.sleep(0.01)


def linked_folders_tour(world, contract: Contract, notebook_id: str) -> None:  # type: ignore[no-untyped-def]
    """A folder on the server linked (the ``folder`` connector), its first round run here as a
    worker would, its documents listed; the sync routes (accepted, SYNC_IN_PROGRESS, a Drive
    folder without authorisation skipped, refusals in the knowledge-base envelope); the caller's
    Drive authorisation stored, read and removed; the folders unlinked."""
    call, check = world.call, contract.check
    svc = services_of(world)
    drives = world.vault.root.parent / "drives"
    (drives / "team").mkdir(parents=True)
    shutil.copy(world.vault.root / "files" / "dmca.pdf", drives / "team" / "dmca.pdf")
    svc.settings = dataclasses.replace(svc.settings, sync_folder_roots=(drives.resolve(),))
    svc.limiter.per_minute["sync"] = 1000
    base = f"/api/notebooks/{notebook_id}/linked-folders"
    body = {"connector": "folder", "folder": str(drives / "team"), "schedule": 3600}
    folder = check(call("POST", base, json=body), 201).json
    check(call("POST", base, json=body), 409, "FOLDER_ALREADY_LINKED")
    check(call("PATCH", f"{base}/{folder['id']}", json={"schedule": 59}), 400, "SCHEDULE_INVALID")
    sync_folder(svc, folder["id"])  # the round the link started, as a worker runs it
    with svc.db.session() as session:  # a Drive folder whose owner has no authorisation
        alice = accounts.principal_for_token(session, svc.settings.vault_hash, world.tokens["alice"])
        drive_folder = linked.link(
            session, alice, session.get(Notebook, notebook_id), connector="google-drive", folder_id="drive-folder",
            folder_name="Drive", schedule_seconds=None,
        )
        drive_folder_id = drive_folder.id
    listed = check(call("GET", base), 200).json["items"]
    assert [(f["connector"], f["document_count"], f["last_sync_outcome"]) for f in listed] == [
        ("folder", 1, "ok"), ("google-drive", 0, None)
    ], listed
    assert check(call("PATCH", f"{base}/{folder['id']}", json={"schedule": "off"}), 200).json["next_sync_at"] is None
    documents = check(call("GET", f"/api/knowledge-base/{notebook_id}/documents?per_page=10"), 200).json["data"]
    assert [(d["name"], d["status"]) for d in documents["items"]] == [("dmca.pdf", "INDEXING")], documents
    # "Sync now": a Drive-only call skips the unauthorised folder, the notebook's starts a round,
    # and while that round runs (no worker here) every other call is refused SYNC_IN_PROGRESS.
    drive = check(call("POST", "/api/workflow/knowledge-base/sync",
                       json={"source": "google-drive", "knowledge_base_ids": [notebook_id]}), 200).json["data"]
    assert drive["accepted"] and [s["reason"] for s in drive["skipped"]] == ["DRIVE_NOT_AUTHORIZED"], drive
    now = check(call("POST", f"{base}/sync"), 200).json
    assert now["accepted"] and now["source"] == "all" and now["matched_folder_count"] == 1, now
    busy = check(call("POST", "/api/knowledge-base/sync",
                      json={"source": "folder", "knowledge_base_ids": [notebook_id, "nope"]}), 200).json["data"]
    assert (busy["accepted"], busy["reason"]) == (False, "SYNC_IN_PROGRESS"), busy
    check(call("POST", "/api/agent/knowledge-base/sync", json={"source": "folder"}), 200)
    refused = check(call("POST", "/api/agent/knowledge-base/sync", json={"source": "dropbox"}), 400).json
    assert (refused["code"], refused["error"]) == (40000, "UNSUPPORTED_SOURCE"), refused
    svc.limiter.per_minute["sync"] = 1
    take_the_minutes_slot(svc, alice.user_id)
    limited = check(call("POST", "/api/knowledge-base/sync", json={"source": "folder"}), 429)
    assert limited.json["error"] == "RATE_LIMITED" and int(limited.headers["Retry-After"]) >= 1
    check(call("POST", f"{base}/sync"), 429, "RATE_LIMITED")
    missing = check(call("GET", "/api/knowledge-base/nope/documents"), 404).json
    assert (missing["code"], missing["error"]) == (40400, "NOTEBOOK_NOT_FOUND"), missing
    retried = check(call("POST", "/api/knowledge-base/documents/retry-failed",
                         json={"knowledge_base_id": notebook_id}), 200).json["data"]
    assert retried["accepted"] is False and retried["matched_doc_count"] == 0, retried
    # The caller's Drive authorisation: stored, never returned, removed.
    check(call("GET", "/api/drive/authorization"), 200)
    secret_values = {"client_id": "client", "client_secret": "a secret", "refresh_token": "a refresh token"}
    stored = check(call("PUT", "/api/drive/authorization", json=secret_values), 200)
    assert stored.json == {"service_account": False, "stored": True, "revoked_at": None, "authorized": True}
    check(call("DELETE", "/api/drive/authorization"), 204)
    for link_id in (folder["id"], drive_folder_id):
        check(call("DELETE", f"{base}/{link_id}"), 204)
    check(call("DELETE", f"{base}/{folder['id']}"), 404, "LINKED_FOLDER_NOT_FOUND")


def internal_tour(world, contract: Contract, source_id: str) -> None:  # type: ignore[no-untyped-def]
    check, client = contract.check, world.client
    draft = running_draft(world)
    check(client.get(f"/internal/jobs/{draft.job_id}", headers=secret(world)), 200)
    check(client.post(f"/internal/jobs/{draft.job_id}/sources/{draft.pending}/activity",
                      json={"activity": "OCR: page 2 (2 of 9)"}, headers=secret(world)), 200)
    check(client.get(f"/internal/sources/{source_id}/content", headers=secret(world)), 200)
    check(client.put(f"/internal/jobs/{draft.job_id}/sources/{draft.pending}/evidence/{uuid.uuid4().hex}",
                     data=a_pack(), headers=secret(world), content_type="application/octet-stream"), 201)
    key = hashlib.sha256(b"an extraction").hexdigest()
    check(client.put(f"/internal/extractions/{key}", data=b"extraction bytes", headers=secret(world),
                     content_type="application/octet-stream"), 201)
    check(client.get(f"/internal/extractions/{key}", headers=secret(world)), 200)


def docs_page_loads(world, contract: Contract) -> None:  # type: ignore[no-untyped-def]
    page = contract.check(world.client.get("/api/docs"), 200)
    assert page.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    html = page.get_data(as_text=True)
    assert not re.search(r"<script\b(?![^>]*\bsrc=)", html), "no inline script: the CSP refuses it"
    urls = re.findall(r'<(?:script|link)\b[^>]*?\b(?:src|href)="([^"]+)"', html)
    assert len(urls) == 4, urls  # favicon, Swagger UI's style and script, our init script
    for url in urls:
        assert url.startswith("/"), f"{url}: the docs page loads nothing from another origin"
        loaded = contract.check(world.client.get(url), 200)
        assert loaded.get_data(), url
    spec_url = re.search(r'data-spec-url="([^"]+)"', html)
    assert spec_url is not None
    contract.check(world.client.get(spec_url.group(1)), 200)


def test_the_docs_page_and_its_assets_load(world, contract: Contract) -> None:
    docs_page_loads(world, contract)
    assert {"openapi.docs", "openapi.asset", "dashboard.static", "openapi.document"} <= set(contract.seen)
    contract.check(world.client.get("/api/docs/assets/index.html"), 404, "ASSET_NOT_FOUND")


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"),
    [
        ("GET", "/api/notebooks", {"headers": {}}, 401, "AUTH_REQUIRED"),
        ("GET", "/api/session", {"headers": {"Authorization": "Bearer nope"}}, 401, "AUTH_INVALID"),
        ("POST", "/api/notebooks", {"data": "{not json", "content_type": "application/json"}, 400, "MALFORMED_JSON"),
        ("POST", "/api/notebooks", {"data": "title=x", "content_type": "text/plain"}, 415, "JSON_REQUIRED"),
        ("POST", "/api/notebooks", {"json": {"title": "t", "resource_ids": "dmca"}}, 400, "FIELD_INVALID"),
        ("POST", "/api/notebooks", {"json": {"title": "t", "resource_ids": ["dmca"], "visiblity": "x"}}, 400, "FIELD_UNKNOWN"),
        ("POST", "/api/notebooks", {"json": {"title": "t", "resource_ids": ["nope"]}}, 404, "RESOURCE_NOT_FOUND"),
        ("POST", "/api/notebooks", {"json": {"title": "t", "resource_ids": ["tmpl"]}}, 422, "RESOURCE_IS_TEMPLATE"),
        ("POST", "/api/notebooks", {"json": {"title": "x" * 1_100_000}}, 413, "REQUEST_ENTITY_TOO_LARGE"),
        ("GET", "/api/notebooks?page=0", {}, 400, "BAD_PAGINATION"),
        ("GET", "/api/notebooks/resources?per_page=201", {}, 400, "PAGE_SIZE_TOO_LARGE"),
        ("GET", "/api/tables/nope/records", {}, 409, "TABLE_NOT_FOUND"),
        ("GET", "/api/notebooks/deadbeef", {}, 404, "NOTEBOOK_NOT_FOUND"),
        ("GET", "/api/citations/resolve?link=https://example.org/x", {}, 400, "CITATION_LINK_INVALID"),
        ("POST", "/api/chat", {"json": {"notebook_id": "x", "message": "m", "tools": []}}, 400, "CONTEXT_NOT_ALLOWED"),
        ("POST", "/api/chat", {"json": {"notebook_id": "deadbeef", "message": "m"}}, 404, "NOTEBOOK_NOT_FOUND"),
        ("GET", "/internal/jobs/x", {"headers": {"Authorization": "Bearer nope"}}, 401, "INTERNAL_AUTH_INVALID"),
        ("PUT", "/internal/extractions/NOT-A-KEY", {"internal": True, "data": b"x"}, 400, "EXTRACTION_KEY_INVALID"),
        ("GET", f"/internal/extractions/{'0' * 64}", {"internal": True}, 404, "EXTRACTION_NOT_FOUND"),
        ("GET", "/api/notebooks/deadbeef/knowledge/concepts", {}, 404, "NOTEBOOK_NOT_FOUND"),
        ("POST", "/api/notebooks/deadbeef/knowledge/ask", {"json": {"question": "q", "scope": "x"}}, 400, "FIELD_UNKNOWN"),
        ("PUT", "/api/notebooks/deadbeef/knowledge/trees/x", {"json": {"nodes": []}}, 400, "FIELD_REQUIRED"),
        ("POST", "/api/notebooks/deadbeef/knowledge/jobs/x/restart", {"data": "stage=write"}, 415, "JSON_REQUIRED"),
    ],
)
def test_errors_match_the_document(world, contract: Contract, method, path, kwargs, status, code) -> None:
    kwargs = dict(kwargs)
    if kwargs.pop("internal", False):
        kwargs["headers"] = secret(world)
    headers = kwargs.pop("headers", world.headers("alice"))
    contract.check(world.client.open(path, method=method, headers=headers, **kwargs), status, code)


def test_errors_of_a_notebook_match_the_document(world, contract: Contract) -> None:
    check, call = contract.check, world.call
    notebook_id = create_notebook(world, ["dmca"], visibility="workspace")
    base = f"/api/notebooks/{notebook_id}"
    check(call("GET", f"{base}/search?q=x"), 409, "NO_ACTIVE_REVISION")
    check(call("GET", f"{base}/search"), 400, "QUERY_REQUIRED")
    check(call("GET", f"{base}/search?q=x&limit=99"), 400, "BAD_LIMIT")
    check(call("GET", f"{base}/evidence/ch_x"), 400, "REVISION_REQUIRED")
    check(call("GET", f"{base}/evidence/ch_x?revision=r"), 404, "REVISION_NOT_FOUND")
    check(call("GET", f"{base}/sources/x/file?revision=r"), 404, "SOURCE_NOT_FOUND")
    check(call("DELETE", f"{base}/sources/nope"), 404, "RESOURCE_NOT_IN_NOTEBOOK")
    check(call("POST", f"{base}/sources", json={"resource_ids": ["dmca"], "ids": []}), 400, "FIELD_UNKNOWN")
    check(call("POST", "/api/chat", json={"notebook_id": notebook_id, "message": "m"}), 409, "NOTEBOOK_NOT_READY")
    check(call("PATCH", base, json={"title": "t"}, who="bob"), 403, "NOT_NOTEBOOK_OWNER")
    check(call("PATCH", base, json={"colour": "red"}), 400, "FIELD_UNKNOWN")
    check(call("POST", "/api/chat", who="vic", json={"notebook_id": notebook_id, "message": "m"}), 403, "READ_ONLY")
    check(call("POST", "/api/notebooks", who="vic", json={"title": "t", "resource_ids": ["dmca"]}), 403, "ROLE_FORBIDDEN")
    check(call("GET", base, who="eve"), 404, "NOTEBOOK_NOT_FOUND")
    check(call("POST", f"{base}/refresh/cancel"), 202)
    check(call("POST", f"{base}/refresh/cancel"), 409, "NO_ACTIVE_JOB")
    services_of(world).limiter.per_minute["refresh"] = 1
    check(call("POST", f"{base}/refresh"), 202)
    limited = check(call("POST", f"{base}/refresh"), 429, "RATE_LIMITED")
    assert limited.headers["Retry-After"] == str(limited.json["retry_after"])
    knowledge_errors_of_a_notebook(world, contract, notebook_id)
    browser = world.app.test_client()
    check(browser.post("/api/session", json={"username": "alice", "password": "wrong"}), 401, "SIGN_IN_FAILED")
    check(browser.post("/api/session", json={"token": world.tokens["alice"]}), 200)
    check(browser.patch(base, json={"title": "t"}), 403, "CSRF_FAILED")


def knowledge_errors_of_a_notebook(world, contract: Contract, notebook_id: str) -> None:  # type: ignore[no-untyped-def]
    """The knowledge layer of a notebook with nothing indexed yet: unknown ids, bad input, a
    viewer, a stale tree (one made of a group needs no concept)."""
    check, call = contract.check, world.call
    base = f"/api/notebooks/{notebook_id}/knowledge"
    check(call("POST", f"{base}/sources", json={"resource_id": "dmca"}), 409, "CONTEXT_NOT_READY")
    check(call("POST", f"{base}/sources", json={"resource_id": "naacl"}), 404, "RESOURCE_NOT_IN_NOTEBOOK")
    check(call("POST", f"{base}/sources", json={"resource": "dmca"}), 400, "FIELD_UNKNOWN")
    check(call("GET", f"{base}/sources/nope"), 404, "KNOWLEDGE_SOURCE_NOT_FOUND")
    check(call("POST", f"{base}/sources/nope/restore"), 404, "KNOWLEDGE_SOURCE_NOT_FOUND")
    check(call("GET", f"{base}/jobs/nope"), 404, "KNOWLEDGE_JOB_NOT_FOUND")
    check(call("POST", f"{base}/jobs/nope/cancel"), 404, "KNOWLEDGE_JOB_NOT_FOUND")
    check(call("POST", f"{base}/jobs/nope/restart", json={"stage": "proofread"}), 400, "FIELD_INVALID")
    check(call("GET", f"{base}/jobs?per_page=101"), 400, "PAGE_SIZE_TOO_LARGE")
    check(call("GET", f"{base}/source-notes/nope"), 404, "SOURCE_NOTE_NOT_FOUND")
    check(call("GET", f"{base}/source-notes/nope/markdown"), 404, "SOURCE_NOTE_NOT_FOUND")
    check(call("GET", f"{base}/notes/nope"), 404, "NOTE_NOT_FOUND")
    check(call("DELETE", f"{base}/notes/nope"), 404, "NOTE_NOT_FOUND")
    check(call("PATCH", f"{base}/notes/nope/blocks/b1", json={"expected_version_id": "v", "text": "t"}), 404, "NOTE_NOT_FOUND")
    check(call("GET", f"{base}/search"), 400, "FIELD_INVALID")
    check(call("GET", f"{base}/concepts/nope"), 404, "CONCEPT_NOT_FOUND")
    check(call("GET", f"{base}/events?page=0"), 400, "BAD_PAGINATION")
    check(call("GET", f"{base}/trees/nope"), 404, "TREE_NOT_FOUND")
    check(call("POST", f"{base}/trees", json={"title": "t", "nodes": [{"key": "a", "kind": "concept", "concept_id": "nope"}]}),
          400, "TREE_INVALID")
    check(call("POST", f"{base}/trees", json={"title": "t"}, who="vic"), 403, "READ_ONLY")
    tree = check(call("POST", f"{base}/trees", json={"title": "Topics", "nodes": [
        {"key": "a", "kind": "group", "title": "A group"}]}), 201).json
    stale = {"expected_version_id": "0" * 32, "nodes": []}
    conflict = check(call("PUT", f"{base}/trees/{tree['id']}", json=stale), 409, "VERSION_CONFLICT").json
    assert conflict["current_version_id"] == tree["version"]["id"], conflict
    check(call("GET", f"{base}/approvals/nope"), 404, "APPROVAL_NOT_FOUND")
    check(call("POST", f"{base}/approvals/nope/approve"), 403, "SIGN_IN_REQUIRED")
    check(signed_in(world.app, world.tokens["alice"])("POST", f"{base}/approvals/nope/approve"), 404, "APPROVAL_NOT_FOUND")
    check(call("GET", f"{base}/sources", who="eve"), 404, "NOTEBOOK_NOT_FOUND")
