"""The pure parts of unattended runs: callback URL checks, occurrences, signatures, the dev-only routes."""

from __future__ import annotations

import base64
import datetime as dt
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from standardwebhooks import Webhook

from stepline.agent.definition import Agent, AgentDefinitionError
from stepline.agent.unattended import Schedule, UnattendedDefinitionError
from stepline.api.app import create_app
from stepline.api.identity import DevTokens
from stepline.runtime.callback_delivery import attempt_delivery, new_delivery
from stepline.runtime.callback_urls import RefusedUrl, UrlPolicy, parse_networks
from stepline.runtime.hook_signatures import BadSignature, EnvHookSecrets, env_name, verify
from stepline.runtime.notifications import RunEvent
from stepline.runtime.schedules import due_occurrences, is_occurrence
from stepline.runtime.services import Services
from stepline.store.memory import MemoryStore

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()


def resolving(*addresses: str) -> UrlPolicy:
    return UrlPolicy(resolve=lambda host, port: list(addresses))


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.5",
        "172.16.1.1",
        "192.168.1.1",
        "127.0.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "fd00::1",
        "::1",
        "::ffff:10.0.0.1",
        "fe80::1",
        "224.0.0.1",
    ],
)
def test_every_private_or_reserved_address_is_refused(address: str) -> None:
    with pytest.raises(RefusedUrl, match="private or reserved"):
        resolving(address).check("https://hooks.example.com/x")


def test_a_host_with_one_private_address_among_public_ones_is_refused() -> None:
    with pytest.raises(RefusedUrl, match="10.0.0.7"):
        resolving("93.184.216.34", "10.0.0.7").check("https://hooks.example.com/x")


def test_the_target_is_the_checked_address_and_keeps_the_name_for_tls() -> None:
    target = resolving("93.184.216.34").check("https://hooks.example.com:8443/in?x=1")
    assert (target.address, target.host, target.port, target.path) == (
        "93.184.216.34",
        "hooks.example.com",
        8443,
        "/in?x=1",
    )


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://hooks.example.com/x", "https"),
        ("ftp://hooks.example.com/x", "https"),
        ("https://user:pw@hooks.example.com/x", "credentials"),
        ("https://hooks.example.com/x#frag", "fragment"),
        ("https://hooks.example.com:99999/x", "not a URL"),
        ("https://" + "a" * 3000, "longer"),
    ],
)
def test_urls_that_are_not_plain_https_are_refused(url: str, why: str) -> None:
    with pytest.raises(RefusedUrl, match=why):
        resolving("93.184.216.34").check(url)


def test_configured_ranges_and_dev_loopback_are_allowed() -> None:
    allowed = UrlPolicy(allowed_networks=parse_networks("10.0.0.0/8"), resolve=lambda h, p: ["10.1.2.3"])
    assert allowed.check("https://internal.corp/x").address == "10.1.2.3"
    dev = UrlPolicy(allow_loopback=True, resolve=lambda h, p: ["127.0.0.1"])
    assert dev.check("http://localhost:9000/x").address == "127.0.0.1"
    with pytest.raises(RefusedUrl, match="https"):
        UrlPolicy(allow_loopback=True, resolve=lambda h, p: ["93.184.216.34"]).check("http://example.com/x")
    with pytest.raises(ValueError, match="not an address range"):
        parse_networks("10.0.0.0/8, nonsense")


@pytest.fixture
def redirecting() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.path)
            self.rfile.read(int(self.headers.get("content-length", "0")))
            self.send_response(307 if self.path == "/start" else 200)
            self.send_header("location", "/elsewhere")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            del format, args

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/start", seen
    finally:
        server.shutdown()
        server.server_close()


def test_a_redirect_is_a_failed_attempt_never_followed(redirecting: tuple[str, list[str]]) -> None:
    url, seen = redirecting
    event = RunEvent(detail_type="Run Completed", detail={"eventId": "r1/end", "userId": "u", "runId": "r1"})
    delivery = new_delivery(event, url, now=1_000)
    tried = attempt_delivery(delivery, secret=SECRET, policy=UrlPolicy(allow_loopback=True), now=2_000, backoff_base=1)
    assert seen == ["/start"] and tried.state == "pending" and tried.next_at == 3_000
    assert tried.attempts[0].status == 307 and "redirects" in (tried.attempts[0].error or "")


def test_a_delivery_gives_up_after_its_attempts_with_growing_waits() -> None:
    event = RunEvent(detail_type="Run Failed", detail={"eventId": "r1/end", "userId": "u", "runId": "r1"})
    delivery = new_delivery(event, "https://10.0.0.1/x", now=0)
    waits: list[int] = []
    while delivery.state == "pending":
        before = delivery.attempts[-1].at if delivery.attempts else 0
        delivery = attempt_delivery(delivery, secret=SECRET, policy=UrlPolicy(), now=delivery.next_at, backoff_base=1)
        waits.append(delivery.next_at - before)
    assert delivery.state == "failed" and len(delivery.attempts) == 8
    assert all("private" in (a.error or "") for a in delivery.attempts)
    assert waits[1:-1] == sorted(waits[1:-1]) and waits[2] == 2 * waits[1]


def test_occurrences_first_sight_keeping_up_and_after_a_gap() -> None:
    every = Schedule(name="s", rate="10 seconds", input="go", owner="u")
    skip = every.model_copy(update={"missed": "skip"})
    assert due_occurrences(every, last_seen=None, now=100_000, grace_ms=5_000) == []
    kept = due_occurrences(every, last_seen=99_000, now=100_000, grace_ms=5_000)
    assert [(d.at.timestamp(), d.missed) for d in kept] == [(100.0, 1)]
    gap = due_occurrences(every, last_seen=40_000, now=100_500, grace_ms=5_000)
    assert [(d.at.timestamp(), d.missed) for d in gap] == [(100.0, 6)]
    assert due_occurrences(skip, last_seen=40_000, now=100_500, grace_ms=5_000) == []


def test_a_cron_schedule_follows_its_time_zone_across_daylight_saving() -> None:
    nightly = Schedule(name="n", cron="0 2 * * *", timezone="Europe/Paris", input="go", owner="u")
    assert is_occurrence(nightly, dt.datetime(2031, 1, 15, 1, 0, tzinfo=dt.UTC))  # 02:00 CET
    assert is_occurrence(nightly, dt.datetime(2031, 7, 15, 0, 0, tzinfo=dt.UTC))  # 02:00 CEST
    assert not is_occurrence(nightly, dt.datetime(2031, 7, 15, 1, 0, tzinfo=dt.UTC))
    winter = int(dt.datetime(2031, 1, 15, 0, 0, tzinfo=dt.UTC).timestamp() * 1000)
    (due,) = due_occurrences(nightly, last_seen=winter, now=winter + 3_600_500, grace_ms=3_700_000)
    assert due.at == dt.datetime(2031, 1, 15, 1, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"cron": "0 2 * * *", "rate": "1 hour"}, "exactly one"),
        ({}, "exactly one"),
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "0 2 * * * *"}, "five-field"),
        ({"rate": "often"}, "not a rate"),
        ({"rate": "1 hour", "timezone": "Mars/Olympus"}, "time zone"),
        ({"rate": "1 hour", "owner": "has space"}, "user id"),
    ],
)
def test_a_schedule_that_cannot_run_is_refused_naming_the_setting(settings: dict[str, str], message: str) -> None:
    with pytest.raises(UnattendedDefinitionError, match=message):
        Schedule(**{"name": "s", "input": "go", "owner": "u", **settings})


def test_two_schedules_of_one_name_are_refused() -> None:
    one = Schedule(name="s", rate="1 hour", input="go", owner="u")
    with pytest.raises(AgentDefinitionError, match="two are named s"):
        Agent(name="a", schedules=[one, one])


def test_schedules_leave_the_fingerprint_of_runs_as_it_was() -> None:
    plain = Agent(name="a", instructions="x")
    scheduled = Agent(name="a", instructions="x", schedules=[Schedule(name="s", rate="1 hour", input="go", owner="u")])
    assert plain.fingerprint() == scheduled.fingerprint()


def test_a_hook_signature_verifies_only_for_its_body_and_secret() -> None:
    now = dt.datetime.now(tz=dt.UTC)
    body = '{"id": 1}'
    headers = {"webhook-id": "m1", "webhook-timestamp": str(int(now.timestamp()))}
    headers["webhook-signature"] = Webhook(SECRET).sign("m1", now, body)
    assert verify(SECRET, body.encode(), headers) == "m1"
    for bad_body, bad_headers in [
        (b'{"id": 2}', headers),
        (body.encode(), {**headers, "webhook-id": "m2"}),
        (body.encode(), {**headers, "webhook-signature": "v1"}),
        (body.encode(), {**headers, "webhook-signature": "v1,@@@"}),
        (body.encode(), {k: v for k, v in headers.items() if k != "webhook-timestamp"}),
        (b"\xff", headers),
    ]:
        with pytest.raises(BadSignature):
            verify(SECRET, bad_body, bad_headers)


def test_hook_secrets_come_from_their_variable_and_must_be_base64() -> None:
    assert env_name("reports", "new-ticket") == "STEPLINE_HOOK_SECRET_REPORTS_NEW_TICKET"
    assert EnvHookSecrets({"STEPLINE_HOOK_SECRET_A_B": SECRET}).secret("a", "b") == SECRET
    assert EnvHookSecrets({}).secret("a", "b") is None
    with pytest.raises(ValueError, match="not base64"):
        EnvHookSecrets({"STEPLINE_HOOK_SECRET_A_B": "not base64!"}).secret("a", "b")


def test_the_dev_routes_are_not_part_of_the_app_aws_serves() -> None:
    app = create_app(Services(store=MemoryStore()), DevTokens())
    paths = set(app.openapi()["paths"])
    assert "/api/runs" in paths and "/api/hooks/{agent}/{hook}" in paths
    assert not any(p.startswith("/api/dev/") for p in paths)
