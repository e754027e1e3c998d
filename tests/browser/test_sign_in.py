"""Signing in with a password or a token, a refused password, and signing out."""
from __future__ import annotations

import re
import time

from browser_support import sign_in_with_token
from playwright.sync_api import expect


def test_a_wrong_password_is_refused_and_signing_out_ends_the_session(service, open_page) -> None:  # type: ignore[no-untyped-def]
    page = open_page("desktop", expected_errors=r"status of 401")  # the refused sign-in request
    page.goto(f"{service.base_url}/notebooks")
    expect(page).to_have_url(re.compile(r"/sign-in\?next="))
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill("not her password")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("alert")).to_have_text("Unknown user, wrong password or no such workspace.")
    expect(page).to_have_url(re.compile(r"/sign-in"))

    sign_in_with_token(page, service, service.alice_token)
    expect(page.get_by_text("alice (editor) · lab")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/sign-in$"))
    page.goto(f"{service.base_url}/notebooks")
    expect(page).to_have_url(re.compile(r"/sign-in\?next="))


def test_a_page_of_an_ended_session_goes_to_sign_in_without_an_uncaught_error(service, open_page) -> None:  # type: ignore[no-untyped-def]
    """The page is served (the browser still holds the session's cookie) but its first call comes
    back 401 and sends the browser to sign in; the page's start must wait for that, not throw (a
    CI run caught the error when the sign-in page came slowly)."""
    page = open_page("desktop", expected_errors=r"status of 401")
    sign_in_with_token(page, service, service.alice_token)
    expect(page.get_by_text("alice (editor) · lab")).to_be_visible()
    ended = page.context.cookies()
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/sign-in$"))
    page.context.add_cookies(ended)  # the signed-out session's cookie, as a second tab would still send it
    page.route(re.compile(r"/sign-in\?next="), lambda route: (time.sleep(1.5), route.continue_()))
    page.goto(f"{service.base_url}/notebooks")
    expect(page).to_have_url(re.compile(r"/sign-in\?next="))


def test_a_poll_refused_after_signing_out_does_not_send_the_browser_elsewhere(service, open_page) -> None:  # type: ignore[no-untyped-def]
    """A page's poll that leaves as the sign-out lands comes back 401; it must not redirect to
    `/sign-in?next=…` over the sign-out's own `/sign-in` (a CI run caught this race)."""
    page = open_page("desktop", expected_errors=r"status of 401")
    sign_in_with_token(page, service, service.alice_token)
    expect(page.get_by_text("alice (editor) · lab")).to_be_visible()
    page.evaluate(
        """async () => {
            const { api } = await import("/static/js/api.js");
            const fetchBefore = window.fetch;
            window.fetch = (input, init = {}) => {
                const answer = fetchBefore(input, init);
                if (init.method === "DELETE" && String(input) === "/api/session") {
                    answer.then(() => api("/api/notebooks").catch(() => {}));
                }
                return answer;
            };
        }"""
    )
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/sign-in$"))
    page.wait_for_timeout(500)
    expect(page).to_have_url(re.compile(r"/sign-in$"))
