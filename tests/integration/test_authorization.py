"""Every route, every actor, a private and a workspace notebook: exact statuses, and no foreign
data in any body. Runs against the real service (gnosi serve, embedded worker)."""
from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from simple_websocket import Client

from storage import accounts
from storage.db import Database
from support.live import Api, Deployment, add_user, deployment
from support.vault import VaultBuilder

pytestmark = pytest.mark.integration

ACTORS = ("creator", "editor", "viewer", "admin", "other_workspace", "other_vault", "anonymous", "revoked")
SAME_WORKSPACE = {"creator", "editor", "viewer", "admin"}
WRITERS = {"creator", "editor", "admin", "other_workspace"}


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[dict]:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("authz")
    vault = VaultBuilder(tmp / "vault")
    vault.pdf_record("dmca", "dmca.pdf")
    vault.pdf_record("naacl", "naacl06-shinyama.pdf")
    with deployment(tmp, vault.root, vault.table_id, redis=False) as d:
        d.start_web()
        tokens = {"creator": d.token}
        for actor, name, workspace, role in (
            ("editor", "bob", "lab", "editor"), ("viewer", "vic", "lab", "viewer"), ("admin", "ada", "lab", "admin"),
            ("other_workspace", "eve", "elsewhere", "editor"), ("revoked", "rex", "lab", "editor"),
        ):
            tokens[actor] = add_user(d.env, name, workspace, role)
        with Database(d.database).session() as session:
            tokens["other_vault"] = accounts.add_user(session, "another-vault-hash", "olga", "lab", "admin")[1]
        with Database(d.database).session() as session:
            accounts.revoke_token(session, _vault_hash(d), tokens["revoked"])
        tokens["anonymous"] = ""
        notebooks = {}
        for visibility in ("private", "workspace"):
            response = d.api.post(
                "/api/notebooks", {"title": f"Secret {visibility} title", "visibility": visibility, "resource_ids": ["dmca"]}
            )
            notebooks[visibility] = response.json()["id"]
            d.api.wait_for_job(notebooks[visibility])
        hit = {
            v: d.api.get(f"/api/notebooks/{nb}/search", q="notice and takedown procedure").json()["results"][0]
            for v, nb in notebooks.items()
        }
        yield {"d": d, "tokens": tokens, "notebooks": notebooks, "hit": hit}


def _vault_hash(d: Deployment) -> str:
    from app.config import Settings

    return Settings.from_env(d.env).vault_hash


def client(d: Deployment, token: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=str(d.api.http.base_url), headers=headers, timeout=60)


def routes(nb: str, hit: dict) -> list[tuple[str, str, str, dict | None, int]]:
    """(kind, method, path, json body, the creator's status); kind: read, converse or manage.

    The creator's statuses are exact because the order is: the first ingestion has finished, so
    the refresh finds nothing changed and starts no job, the cancel then finds none to cancel, and
    the per-resource refresh queues one.
    """
    evidence = f"/api/notebooks/{nb}/evidence/{hit['chunk_id']}?revision={hit['revision_id']}"
    source_file = f"/api/notebooks/{nb}/sources/{hit['source_id']}/file?revision={hit['revision_id']}"
    return [
        ("read", "GET", f"/api/notebooks/{nb}", None, 200),
        ("read", "GET", f"/api/notebooks/{nb}/sources", None, 200),
        ("read", "GET", f"/api/notebooks/{nb}/search?q=takedown", None, 200),
        ("read", "GET", evidence, None, 200),
        ("read", "GET", source_file, None, 200),
        ("read", "GET", f"/api/notebooks/{nb}/conversation", None, 200),
        ("read", "GET", f"/api/notebooks/{nb}/chat-sources", None, 200),
        ("converse", "POST", "/api/chat", {"notebook_id": nb, "message": "What is the notice and takedown procedure?"}, 200),
        ("manage", "PATCH", f"/api/notebooks/{nb}", {"title": f"Secret title {nb[:4]}"}, 200),
        ("manage", "POST", f"/api/notebooks/{nb}/sources", {"resource_ids": ["dmca"]}, 202),
        ("manage", "DELETE", f"/api/notebooks/{nb}/sources/not-a-member", None, 404),
        ("manage", "POST", f"/api/notebooks/{nb}/refresh", None, 202),
        ("manage", "POST", f"/api/notebooks/{nb}/refresh/cancel", None, 409),
        ("manage", "POST", f"/api/notebooks/{nb}/sources/dmca/refresh", None, 202),
        ("manage", "DELETE", "/api/notebooks/" + nb + "-not-really", None, 404),
    ]


def expected(actor: str, visibility: str, kind: str, creators: int) -> int:
    """The one status ``actor`` must get; ``creators`` is what the creator gets on this route."""
    if actor in ("anonymous", "revoked", "other_vault"):
        return 401
    visible = actor == "creator" or (visibility == "workspace" and actor in SAME_WORKSPACE)
    if not visible:
        return 404
    if kind == "read":
        return 200
    if kind == "converse":
        return 200 if actor in WRITERS else 403
    return creators if actor == "creator" else 403


@pytest.mark.parametrize("actor", ACTORS)
@pytest.mark.parametrize("visibility", ["private", "workspace"])
def test_every_route_for_every_actor(world, actor: str, visibility: str) -> None:
    d, nb = world["d"], world["notebooks"][visibility]
    with client(d, world["tokens"][actor]) as http:
        for kind, method, path, body, creators in routes(nb, world["hit"][visibility]):
            response = http.request(method, path, json=body)
            if path.endswith("-not-really"):
                assert response.status_code == (401 if actor in ("anonymous", "revoked", "other_vault") else 404)
                continue
            want = expected(actor, visibility, kind, creators)
            assert response.status_code == want, (actor, visibility, method, path, response.text)
            if response.status_code in (401, 403, 404):
                assert set(response.json()) <= {"code", "message", "field", "retry_after"}
                assert "Secret" not in response.text and nb not in response.text.replace(path, "")


@pytest.mark.parametrize("actor", ACTORS)
def test_library_and_catalogue_show_only_what_the_actor_may_see(world, actor: str) -> None:
    d = world["d"]
    with client(d, world["tokens"][actor]) as http:
        library = http.get("/api/notebooks")
        resources = http.get("/api/notebooks/resources")
        create = http.post("/api/notebooks", json={"title": "Mine", "resource_ids": ["naacl"]})
    if actor in ("anonymous", "revoked", "other_vault"):
        assert {library.status_code, resources.status_code, create.status_code} == {401}
        return
    seen = {item["id"] for item in library.json()["items"]}
    expected_ids = set()
    if actor == "creator":
        expected_ids = set(world["notebooks"].values())
    elif actor in SAME_WORKSPACE:
        expected_ids = {world["notebooks"]["workspace"]}
    assert expected_ids <= seen
    if actor != "creator":
        assert world["notebooks"]["private"] not in seen
    assert resources.status_code == 200
    assert create.status_code == (403 if actor == "viewer" else 201)


def test_guessed_ids_across_workspaces_never_leak_existence(world) -> None:
    d = world["d"]
    with client(d, world["tokens"]["other_workspace"]) as http:
        real = http.get(f"/api/notebooks/{world['notebooks']['workspace']}")
        fake = http.get("/api/notebooks/0123456789abcdef0123456789abcdef")
    assert real.status_code == fake.status_code == 404 and real.json() == fake.json()


def test_a_viewer_cannot_send_a_websocket_turn(world) -> None:
    d = world["d"]
    base = str(d.api.http.base_url).rstrip("/").replace("http://", "ws://")
    ws = Client.connect(base + "/api/chat/ws", headers={"Authorization": f"Bearer {world['tokens']['viewer']}"})
    try:
        ws.send(json.dumps({"type": "turn", "notebook_id": world["notebooks"]["workspace"], "message": "takedown?"}))
        message = json.loads(ws.receive(timeout=30))
    finally:
        ws.close()
    assert message["event"] == "error" and message["data"]["code"] == "READ_ONLY"


def test_a_revoked_token_stops_working_at_once(world) -> None:
    d = world["d"]
    token = add_user(d.env, "tess", "lab", "editor")
    api = Api(str(d.api.http.base_url), token)
    assert api.get("/api/notebooks").status_code == 200
    with Database(d.database).session() as session:
        assert accounts.revoke_token(session, _vault_hash(d), token)
    response = api.get("/api/notebooks")
    assert response.status_code == 401 and response.json()["code"] == "AUTH_INVALID"


def test_a_cookie_session_cannot_be_used_by_another_sites_websocket(world) -> None:
    d = world["d"]
    with httpx.Client(base_url=str(d.api.http.base_url)) as browser:
        assert browser.post("/api/session", json={"token": world["tokens"]["creator"]}).status_code == 200
        cookie = f"gnosi_session={browser.cookies['gnosi_session']}"
    base = str(d.api.http.base_url).rstrip("/").replace("http://", "ws://")
    turn = json.dumps({"type": "turn", "notebook_id": world["notebooks"]["private"], "message": "takedown?"})
    for origin, allowed in (("http://evil.example", False), (str(d.api.http.base_url).rstrip("/"), True)):
        ws = Client.connect(base + "/api/chat/ws", headers={"Cookie": cookie, "Origin": origin})
        try:
            ws.send(turn)
            first = json.loads(ws.receive(timeout=60))
        finally:
            ws.close()
        if allowed:
            assert first["event"] != "error", first
        else:
            assert first["event"] == "error" and first["data"]["code"] == "AUTH_REQUIRED"
