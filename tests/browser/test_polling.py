"""Only the visible, open notebook is polled, and a hidden tab makes no requests at all; the shared
transcript's poll is a conditional request (the server answers it 304 while nothing changed).

The page's timers run on Playwright's fake clock, so minutes of polling take milliseconds and
the counts are exact; visibility is switched the way the Page Visibility API reports it.
"""
from __future__ import annotations

from browser_support import sign_in_with_token
from playwright.sync_api import Page, expect

SET_VISIBILITY = """(state) => {
  Object.defineProperty(document, "visibilityState", { configurable: true, get: () => state });
  Object.defineProperty(document, "hidden", { configurable: true, get: () => state === "hidden" });
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def advance(page: Page, milliseconds: int, steps: int) -> None:
    """Move the fake clock in steps, letting each poll's real HTTP round trip finish."""
    for _ in range(steps):
        page.clock.run_for(milliseconds)
        page.wait_for_timeout(250)


def test_only_the_visible_notebook_is_polled(service, open_page) -> None:  # type: ignore[no-untyped-def]
    api = service.deployment.api
    body = {"title": "Polled", "visibility": "workspace", "conversation_mode": "shared", "resource_ids": ["dmca"]}
    polled = api.post("/api/notebooks", body).json()["id"]
    other = api.create(["dmca"], title="Never polled")
    for notebook_id in (polled, other):
        assert api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"

    page = open_page("desktop")
    sign_in_with_token(page, service, service.alice_token)
    page.clock.install()
    requests: list[str] = []
    page.on("request", lambda request: "/api/" in request.url and requests.append(request.url))
    page.goto(f"{service.base_url}/notebooks/{polled}")
    expect(page.locator("[data-role=notebook-status]")).to_have_text("Ready")
    page.wait_for_timeout(500)

    requests.clear()
    advance(page, 10_500, steps=3)
    detail = [url for url in requests if url.endswith(f"/api/notebooks/{polled}")]
    transcript = [url for url in requests if url.endswith(f"/api/notebooks/{polled}/conversation")]
    assert len(detail) >= 2 and len(transcript) >= 2, requests
    assert not [url for url in requests if other in url], requests

    page.evaluate(SET_VISIBILITY, "hidden")
    requests.clear()
    advance(page, 30_000, steps=4)
    assert requests == [], f"a hidden tab polled: {requests}"

    page.evaluate(SET_VISIBILITY, "visible")
    page.wait_for_timeout(500)
    assert any(url.endswith(f"/api/notebooks/{polled}") for url in requests), requests

    library = open_page("desktop")
    library.clock.install()
    sign_in_with_token(library, service, service.alice_token)
    expect(library.get_by_role("link", name="Never polled")).to_be_visible()
    library.wait_for_timeout(500)
    library_requests: list[str] = []
    library.on("request", lambda request: "/api/" in request.url and library_requests.append(request.url))
    advance(library, 30_000, steps=2)
    assert library_requests == [], f"the library polled: {library_requests}"


def test_the_shared_transcript_poll_is_revalidated_and_shows_a_new_turn(service, open_page) -> None:  # type: ignore[no-untyped-def]
    api = service.deployment.api
    body = {"title": "Shared talk", "visibility": "workspace", "conversation_mode": "shared", "resource_ids": ["dmca"]}
    notebook_id = api.post("/api/notebooks", body).json()["id"]
    assert api.wait_for_job(notebook_id)["job"]["state"] == "succeeded"
    assert api.chat({"notebook_id": notebook_id, "message": "Who signed the DMCA?"})[0] == 200

    page = open_page("desktop")
    sign_in_with_token(page, service, service.alice_token)
    page.clock.install()
    polls: list[tuple[int, str | None]] = []
    page.on("response", lambda response: response.url.endswith(f"/api/notebooks/{notebook_id}/conversation") and polls.append(
        (response.status, response.request.header_value("if-none-match"))
    ))
    page.goto(f"{service.base_url}/notebooks/{notebook_id}")
    expect(page.get_by_text("Who signed the DMCA?")).to_be_visible()

    advance(page, 10_500, steps=2)
    # The browser asks with the ETag it was given (the API tests check the 304); Playwright reports
    # the kept answer the browser then hands the page, with its status, 200.
    assert len(polls) >= 2 and polls[0][1] is None and all(tag for _, tag in polls[1:]), polls

    assert api.chat({"notebook_id": notebook_id, "message": "Into how many titles is the DMCA divided?"})[0] == 200
    advance(page, 10_500, steps=1)
    expect(page.get_by_text("Into how many titles is the DMCA divided?")).to_be_visible()
    assert polls[-1][0] == 200, polls
