"""The web UI's sign-in (issue 13), in a real browser, against a real OpenID provider.

The provider is the `oidc-provider` package (tests/node/oidc_server.mjs) with one client shaped
like template.yaml's Cognito app client; `stepline dev` checks its ID tokens (`JwtIdentity`, with
STEPLINE_OIDC_ISSUER / STEPLINE_OIDC_CLIENT_ID) and tells the UI where to sign in (`/config.json`).
The browser talks to the dev server directly: the provider's client must know the UI's origin
before either starts, so the dev server's socket is bound first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Page, Request, Route, expect

from tests.browser.book import BOOK_SCRIPTS
from tests.browser.conftest import VIEWPORT, Console, screenshot
from tests.support.oidc import CLIENT_ID, oidc_provider
from tests.support.server import Running, config, free_socket, running, write_book

HELLO = "Hello from the script."


def forged(token: str) -> str:
    """The token with its signature changed (the provider's key no longer verifies it)."""
    return token[:-4] + ("BBBB" if token.endswith("AAAA") else "AAAA")


JWT = re.compile(r"^Bearer [\w-]+\.[\w-]+\.[\w-]+$")
STORED_USER = "Object.keys(sessionStorage).find(k => k.startsWith('oidc.user:'))"


@dataclass
class LoginStack:
    server: Running
    issuer: str

    @property
    def origin(self) -> str:
        return self.server.url

    def api(self, token: str | None) -> httpx.Client:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.origin, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def login_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoginStack]:
    tmp: Path = tmp_path_factory.mktemp("login")
    model = write_book(tmp / "book.json", BOOK_SCRIPTS["scripts"], BOOK_SCRIPTS["fallback"])
    sock = free_socket()
    origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with oidc_provider(origin) as issuer:
        cfg = config(model, STEPLINE_OIDC_ISSUER=issuer, STEPLINE_OIDC_CLIENT_ID=CLIENT_ID)
        with running(cfg, sock=sock) as server:
            assert server.url == origin
            yield LoginStack(server, issuer)


@dataclass
class LoginUi:
    page: Page
    console: Console
    stack: LoginStack
    api_requests: list[Request] = field(default_factory=list[Request])
    provider_requests: list[Request] = field(default_factory=list[Request])

    def open(self, path: str = "/") -> None:
        self.page.goto(self.stack.origin + path)

    def sign_in(self, user: str) -> None:
        """Fill in the provider's sign-in page (the browser must be on it, or on its way there)."""
        self.page.wait_for_url(re.compile(re.escape(self.stack.issuer) + "/interaction/"))
        self.page.get_by_label("User name").fill(user)
        self.page.get_by_role("button", name="Sign in").click()
        self.page.get_by_test_id("composer-input").wait_for()
        assert self.page.url.startswith(self.stack.origin)

    def send(self, text: str) -> None:
        box = self.page.get_by_test_id("composer-input")
        box.fill(text)
        box.press("Enter")

    def settled_answer(self) -> str:
        trace = self.page.get_by_test_id("assistant-message").last.get_by_test_id("execution-trace")
        expect(trace).to_have_attribute("data-trace-state", "complete", timeout=20_000)
        expect(self.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "ready")
        return self.page.get_by_test_id("assistant-message").last.get_by_test_id("final-answer").inner_text()

    @property
    def chat_id(self) -> str:
        return str(self.page.get_by_test_id("chat").get_attribute("data-chat-id"))

    def stored_user(self) -> dict[str, Any]:
        """What oidc-client-ts keeps for this tab (sessionStorage): the tokens and their expiry."""
        raw = self.page.evaluate(f"() => sessionStorage.getItem({STORED_USER} ?? '')")
        assert raw, "no signed-in user is stored"
        return json.loads(raw)

    def change_stored_user(self, **changes: Any) -> None:
        self.page.evaluate(
            f"""changes => {{
                const key = {STORED_USER};
                const user = JSON.parse(sessionStorage.getItem(key));
                sessionStorage.setItem(key, JSON.stringify({{ ...user, ...changes }}));
            }}""",
            changes,
        )

    def id_token(self) -> str:
        return str(self.stored_user()["id_token"])

    def sign_ins(self) -> list[Request]:
        return [r for r in self.provider_requests if r.url.startswith(f"{self.stack.issuer}/auth?")]

    def refreshes(self) -> list[Request]:
        return [r for r in self.provider_requests if "grant_type=refresh_token" in (r.post_data or "")]

    def unauthorized_api_requests(self) -> list[str]:
        """The API requests the UI sent without a bearer token (a redirect's target is the link the
        API handed out, a capability of its own: a presigned S3 link on AWS)."""
        return [
            f"{r.method} {r.url}"
            for r in self.api_requests
            if r.redirected_from is None and not JWT.match(r.headers.get("authorization", ""))
        ]


def make_login_ui(browser: Browser, stack: LoginStack) -> Iterator[LoginUi]:
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    page = context.new_page()
    page.set_default_timeout(15_000)
    console = Console()
    page.on("console", console.add)
    page.on("pageerror", lambda error: console.messages.append(f"pageerror: {error}"))
    ui = LoginUi(page, console, stack)
    outside: list[str] = []
    local = (stack.origin, "data:", f"blob:{stack.origin}")

    def record(request: Request) -> None:
        if request.url.startswith(f"{stack.origin}/api/"):
            ui.api_requests.append(request)
        elif request.url.startswith(stack.issuer):
            ui.provider_requests.append(request)
        elif not request.url.startswith(local):
            outside.append(request.url)

    page.on("request", record)
    yield ui
    context.close()
    assert outside == [], f"requests to neither the UI's origin nor the provider: {outside}"
    assert ui.unauthorized_api_requests() == [], "an API request without the token"


@pytest.fixture
def ui(browser: Browser, login_stack: LoginStack) -> Iterator[LoginUi]:
    yield from make_login_ui(browser, login_stack)


def assert_clean_console(ui: LoginUi, *allowed: str) -> None:
    unexpected = ui.console.unexpected(*allowed)
    assert unexpected == [], unexpected


# -- (1) the redirect to the provider and back ----------------------------------------------------


def test_opening_the_ui_sends_the_browser_to_the_provider_and_back_signed_in(ui: LoginUi) -> None:
    with ui.stack.api(None) as anonymous:
        assert anonymous.get("/config.json").json()["auth"] == {
            "authority": ui.stack.issuer,
            "clientId": CLIENT_ID,
            "scope": "openid email profile",
        }
    ui.open()
    ui.sign_in("alice")
    expect(ui.page.get_by_test_id("account-name")).to_have_text("User alice")
    expect(ui.page.get_by_test_id("account-email")).to_have_text("alice@example.test")
    assert len(ui.sign_ins()) == 1
    assert not re.search(r"[?&](code|state)=", ui.page.url), "the callback's code stays in the address bar"
    authorize = ui.sign_ins()[0].url
    assert "code_challenge_method=S256" in authorize and "response_type=code" in authorize
    ui.page.get_by_test_id("sign-out").wait_for()
    screenshot(ui.page, "signed-in")
    assert_clean_console(ui)


# -- (2) a chat with the token, as the token's user -----------------------------------------------


def test_a_chat_streams_with_the_id_token_and_belongs_to_the_tokens_user(browser: Browser, ui: LoginUi) -> None:
    ui.open()
    ui.sign_in("alice")
    ui.send("hello there")
    assert ui.settled_answer() == HELLO
    chat_id = ui.chat_id
    token = ui.id_token()
    assert ui.unauthorized_api_requests() == []
    assert any(r.method == "POST" and r.url.endswith("/api/chat") for r in ui.api_requests)
    # The server took the user from the token: the conversation is alice's, listed for her only.
    with ui.stack.api(token) as alice:
        assert chat_id in [c["id"] for c in alice.get("/api/conversations").json()["conversations"]]
    with ui.stack.api(None) as anonymous:
        assert anonymous.get("/api/conversations").status_code == 401
    bob = next(make_login_ui(browser, ui.stack))
    bob.open(f"/c/{chat_id}")
    bob.sign_in("bob")
    expect(bob.page).to_have_url(f"{ui.stack.origin}/c/{chat_id}")  # the deep link survives the sign-in
    expect(bob.page.get_by_test_id("account-name")).to_have_text("User bob")
    expect(bob.page.get_by_test_id("user-message")).to_have_count(0)  # alice's conversation is not his
    expect(bob.page.get_by_test_id("conversation-item").filter(has_text="hello there")).to_have_count(0)
    with ui.stack.api(bob.id_token()) as as_bob:
        assert as_bob.get(f"/api/conversations/{chat_id}").status_code == 404
        assert chat_id not in [c["id"] for c in as_bob.get("/api/conversations").json()["conversations"]]
    bob.page.context.close()
    assert_clean_console(ui)


# -- (3) tokens that expire or are refused ----------------------------------------------------------


def test_an_expired_token_is_renewed_with_the_refresh_token_without_a_new_sign_in(ui: LoginUi) -> None:
    ui.open()
    ui.sign_in("alice")
    assert ui.stored_user()["refresh_token"], "the provider gives a refresh token (as Cognito does)"
    # The stored token has expired: it is renewed before the next request goes out.
    ui.change_stored_user(expires_at=1)
    ui.send("hello there")
    assert ui.settled_answer() == HELLO
    assert len(ui.refreshes()) == 1
    assert ui.stored_user()["expires_at"] > 1
    renewed = ui.id_token()
    # The server refuses the token (here: a broken signature): renewed once, then sent again.
    ui.change_stored_user(id_token=forged(renewed))
    ui.send("hello again")
    expect(ui.page.get_by_test_id("assistant-message")).to_have_count(2)
    assert ui.settled_answer() == HELLO
    assert len(ui.refreshes()) == 2
    assert len(ui.sign_ins()) == 1, "no new sign-in: the refresh token sufficed"
    # Requests already on their way when the token was refused carry it too (the sidebar's poll):
    # each is refused once, and they share the one renewal counted above.
    rejected = [r for r in ui.api_requests if r.headers.get("authorization") == f"Bearer {forged(renewed)}"]
    statuses = [response.status for r in rejected if (response := r.response())]
    assert statuses and set(statuses) == {401}, statuses
    with ui.stack.api(ui.id_token()) as alice:
        stored = alice.get(f"/api/conversations/{ui.chat_id}").json()
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant", "user", "assistant"]
    assert_clean_console(ui, r"status of 401")


def test_a_refused_token_without_a_refresh_leads_to_a_fresh_sign_in_back_to_the_same_conversation(ui: LoginUi) -> None:
    ui.open()
    ui.sign_in("alice")
    ui.send("hello there")
    assert ui.settled_answer() == HELLO
    chat_id = ui.chat_id
    token = ui.id_token()
    # The session is over: the ID token is refused, the refresh token too, and the provider's
    # own session has ended (its cookies are gone), so the provider asks who this is again.
    ui.change_stored_user(id_token=forged(token), refresh_token="revoked")
    ui.page.context.clear_cookies()
    # The next API request finds out (the sidebar's re-read on focus: any request would, the
    # poll's among them, so the test does not race it by typing a message).
    ui.page.evaluate("() => window.dispatchEvent(new Event('focus'))")
    ui.sign_in("alice")
    assert len(ui.sign_ins()) == 2
    # Back on the same conversation, with what the server stored of it.
    expect(ui.page).to_have_url(f"{ui.stack.origin}/c/{chat_id}")
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-id", chat_id)
    expect(ui.page.get_by_test_id("user-message")).to_have_count(1)
    expect(ui.page.get_by_test_id("user-message")).to_contain_text("hello there")
    expect(ui.page.get_by_test_id("assistant-message").last.get_by_test_id("final-answer")).to_have_text(HELLO)
    # And it goes on, as alice.
    ui.send("hello again")
    expect(ui.page.get_by_test_id("assistant-message")).to_have_count(2)
    assert ui.settled_answer() == HELLO
    with ui.stack.api(ui.id_token()) as alice:
        stored = alice.get(f"/api/conversations/{chat_id}").json()
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant", "user", "assistant"]
    assert_clean_console(ui, r"status of 401", r"status of 400")  # the refused token, then the refused refresh


# -- (4) sign-out -------------------------------------------------------------------------------------


def test_sign_out_ends_the_providers_session_and_forgets_the_tokens(ui: LoginUi) -> None:
    ui.open()
    ui.sign_in("alice")
    ui.page.get_by_test_id("sign-out").click()
    ui.page.wait_for_url(re.compile(re.escape(ui.stack.issuer) + "/session/end"))
    ui.page.get_by_role("button", name="Yes, sign me out").click()
    expect(ui.page.get_by_test_id("signin-page")).to_contain_text("You are signed out.")
    assert ui.page.url == f"{ui.stack.origin}/"
    assert ui.page.evaluate(f"() => {STORED_USER} ?? null") is None
    # Signing in again asks the provider who this is (its session ended too).
    ui.page.get_by_test_id("sign-in").click()
    ui.sign_in("bob")
    expect(ui.page.get_by_test_id("account-name")).to_have_text("User bob")
    assert_clean_console(ui)


def test_sign_out_through_a_cognito_style_logout_url(ui: LoginUi) -> None:
    """The stack's config.json names Cognito's managed-login `/logout`, which takes `client_id` and
    `logout_uri` (not the standard `post_logout_redirect_uri`): sign-out goes there instead."""
    logout = f"{ui.stack.issuer}/logout"
    asked: list[dict[str, list[str]]] = []

    def with_logout_url(route: Route) -> None:
        response = route.fetch()
        body = response.json()
        body["auth"]["logoutUrl"] = logout
        route.fulfill(response=response, json=body)

    def cognito_logout(route: Route) -> None:
        query = parse_qs(urlsplit(route.request.url).query)
        asked.append(query)
        route.fulfill(status=302, headers={"location": query["logout_uri"][0]})

    ui.page.route(f"{ui.stack.origin}/config.json", with_logout_url)
    ui.page.route(re.compile(re.escape(logout) + r"\?"), cognito_logout)
    ui.open()
    ui.sign_in("alice")
    ui.page.get_by_test_id("sign-out").click()
    expect(ui.page.get_by_test_id("signin-page")).to_contain_text("You are signed out.")
    assert asked == [{"client_id": [CLIENT_ID], "logout_uri": [f"{ui.stack.origin}/"]}]
    assert ui.page.evaluate(f"() => {STORED_USER} ?? null") is None
    assert_clean_console(ui)


def test_a_view_that_rereads_while_sign_out_is_under_way_sends_nothing_without_the_token(ui: LoginUi) -> None:
    """Sign-out forgets the tokens, then the page leaves for the provider. A sidebar answer that
    lands in between (its request went out signed in) re-renders the views, and the usage view
    re-reads: that read must not go out without a token (the teardown checks every request)."""
    logout = f"{ui.stack.issuer}/logout"
    listings: list[Route] = []
    leaving: list[Route] = []

    def with_logout_url(route: Route) -> None:
        response = route.fetch()
        body = response.json()
        body["auth"]["logoutUrl"] = logout
        route.fulfill(response=response, json=body)

    def hold_listing(route: Route) -> None:
        listings.append(route)

    def at_logout(route: Route) -> None:
        # The page is on its way out, its tokens gone: now the sidebar's answer lands, with a
        # conversation it has not shown (the views re-render). The page stays until released.
        late = {
            "id": "conv-late",
            "title": "Arrived late",
            "status": "idle",
            "activeRunId": None,
            "createdAt": 1,
            "updatedAt": 1,
        }
        for listing in listings:
            listing.fulfill(json={"conversations": [late]})
        leaving.append(route)

    ui.page.route(f"{ui.stack.origin}/config.json", with_logout_url)
    ui.open()
    ui.sign_in("alice")
    expect(ui.page.get_by_test_id("usage")).to_be_visible()
    ui.page.route(re.compile(re.escape(ui.stack.origin) + r"/api/conversations\?"), hold_listing)
    ui.page.route(re.compile(re.escape(logout) + r"\?"), at_logout)
    with ui.page.expect_request(re.compile(r"/api/conversations\?")):
        ui.page.evaluate("() => window.dispatchEvent(new Event('focus'))")  # the sidebar re-reads
    # (a click in the page: Playwright's own would wait for the navigation it starts, held here)
    ui.page.evaluate("() => document.querySelector('[data-testid=sign-out]').click()")
    while not leaving:
        ui.page.wait_for_timeout(50)
    ui.page.wait_for_timeout(1000)  # the views re-render and re-read (microtasks away) meanwhile
    leaving[0].fulfill(status=302, headers={"location": f"{ui.stack.origin}/"})
    expect(ui.page.get_by_test_id("signin-page")).to_contain_text("You are signed out.")
    usage_reads = [r for r in ui.api_requests if "/api/usage" in r.url]
    assert usage_reads and all(JWT.match(r.headers.get("authorization", "")) for r in usage_reads)


def test_a_callback_that_does_not_match_a_sign_in_says_so_and_offers_another(ui: LoginUi) -> None:
    ui.open("/?error=access_denied&state=not-ours")
    expect(ui.page.get_by_test_id("signin-page")).to_contain_text("Sign-in did not complete")
    assert ui.page.url == f"{ui.stack.origin}/"
    ui.page.get_by_test_id("sign-in").click()
    ui.sign_in("alice")
    expect(ui.page.get_by_test_id("account-name")).to_have_text("User alice")
    assert_clean_console(ui)


# -- every API request carries the token ---------------------------------------------------------


def test_every_api_request_of_the_ui_carries_the_token(ui: LoginUi) -> None:
    """The chat POST, the resume GET, the sidebar, the approval webhook and the file preview and
    download: none leaves without `Authorization: Bearer <ID token>`."""
    ui.open()
    ui.sign_in("alice")
    ui.send("save an artifact")
    card = ui.page.get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-approval-state", "requested")
    ui.page.reload()  # the resume GET follows the wait; the decision goes to the approval webhook
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "streaming")
    card.get_by_role("button", name="Approve").click()
    assert ui.settled_answer() == "Saved."
    artifact = ui.page.get_by_test_id("artifact-card")
    artifact.click()
    dialog = ui.page.get_by_test_id("preview-dialog")
    expect(dialog.get_by_test_id("preview-markdown").locator("h1")).to_have_text("Hello artifact")
    with ui.page.expect_download() as download:
        dialog.get_by_test_id("preview-download").click()
    assert Path(download.value.path()).read_text() == "# Hello artifact\n"
    paths = [(r.method, r.url.removeprefix(ui.stack.origin)) for r in ui.api_requests]
    seen = {(method, re.sub(r"/api/(\w+)/[^/?]+", r"/api/\1/ID", path)) for method, path in paths}
    for expected in [
        ("POST", "/api/chat"),
        ("GET", "/api/chat/ID/stream"),
        ("GET", "/api/conversations?limit=100"),
        ("GET", "/api/conversations/ID"),
        ("POST", "/api/approvals/ID"),
        ("GET", "/api/artifacts/ID"),
    ]:
        assert expected in seen, (expected, seen)
    assert ui.unauthorized_api_requests() == []
    assert_clean_console(ui)
