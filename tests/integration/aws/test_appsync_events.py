"""The AppSync Events adapter of stream push, against a local Event API speaking the real protocol.

`tests/support/fake_appsync_events.py` verifies every SigV4 signature, so a test that gets a
`data` message has also shown that the publish, the connection and the subscription were signed
for the bodies the protocol signs.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from botocore.credentials import Credentials

from stepline.aws.appsync_auth import EventApiSigner
from stepline.aws.appsync_events import AppSyncEventsNotifier, channel_of
from stepline.aws.appsync_realtime import RealtimeClient
from tests.support.fake_appsync_events import CREDENTIALS, FakeEventApi, signer_for

USER, RUN = "alice@example.com", "run-0001"


def _notifier(fake: FakeEventApi) -> AppSyncEventsNotifier:
    return AppSyncEventsNotifier(fake.api, signer=signer_for(fake.api))


def test_a_publish_reaches_the_subscriber_of_the_runs_channel() -> None:
    with FakeEventApi() as fake:
        notifier = _notifier(fake)

        async def scenario() -> tuple[bool, bool]:
            subscription = notifier.subscribe(USER, RUN)
            subscribed = await subscription.wait(10)  # subscribe_success wakes it: read the log now
            await asyncio.to_thread(fake.wait_for, lambda: fake.subscribers(channel_of(USER, RUN)) == 1)
            notifier.notify(USER, RUN, 7)
            notified = await subscription.wait(10)
            subscription.close()
            await asyncio.to_thread(fake.wait_for, lambda: fake.subscribers(channel_of(USER, RUN)) == 0)
            return subscribed, notified

        assert asyncio.run(scenario()) == (True, True)
        assert notifier.flush(5)
        [published] = fake.published
        assert published.channel == channel_of(USER, RUN)
        assert [json.loads(e) for e in published.events] == [{"seq": 7}]
        assert fake.delivered == 1


def test_another_runs_publish_is_not_delivered_to_a_stream() -> None:
    with FakeEventApi() as fake:
        notifier = _notifier(fake)

        async def scenario() -> None:
            subscription = notifier.subscribe(USER, RUN)
            assert await subscription.wait(10)
            notifier.notify("bob", RUN, 3)  # same run id, another user: another channel
            assert await asyncio.to_thread(notifier.flush, 5)
            notifier.notify(USER, "run-0002", 3)
            assert await asyncio.to_thread(notifier.flush, 5)
            notifier.notify(USER, RUN, 4)  # published after the others: delivered after them
            assert await subscription.wait(10)
            await asyncio.to_thread(fake.wait_for, lambda: fake.delivered >= 1)
            subscription.close()

        asyncio.run(scenario())
        assert len({p.channel for p in fake.published}) == 3
        assert fake.delivered == 1, "only the stream's own run reached it"


def test_requests_are_signed_and_the_payloads_carry_no_secret_and_no_ids() -> None:
    with FakeEventApi() as fake:
        notifier = _notifier(fake)

        async def scenario() -> None:
            subscription = notifier.subscribe(USER, RUN)
            assert await subscription.wait(10)
            notifier.notify(USER, RUN, 1)
            notifier.notify(USER, RUN, 2)
            assert await subscription.wait(10)
            subscription.close()

        asyncio.run(scenario())
        assert notifier.flush(5)
    [handshake] = fake.handshakes
    assert handshake["host"] == fake.api.http_domain
    assert {"authorization", "x-amz-date", "x-amz-security-token"} <= set(handshake)
    assert handshake["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={CREDENTIALS.access_key}/")
    for published in fake.published:
        assert published.headers["authorization"].startswith("AWS4-HMAC-SHA256 ")
        assert all(set(json.loads(e)) == {"seq"} for e in published.events)
        assert USER not in published.channel and RUN not in published.channel
    recorded = json.dumps([fake.handshakes, [p.__dict__ for p in fake.published]])
    assert CREDENTIALS.secret_key not in recorded  # signed with, never sent


def test_wrong_credentials_are_refused_and_cost_only_the_push() -> None:
    with FakeEventApi() as fake:
        stolen = Credentials(CREDENTIALS.access_key, "not-the-secret", CREDENTIALS.token)
        notifier = AppSyncEventsNotifier(fake.api, signer=EventApiSigner(fake.api, credentials=lambda: stolen))

        async def scenario() -> tuple[bool, str]:
            subscription = notifier.subscribe(USER, RUN)
            woke = await subscription.wait(10)  # the refused connection wakes the stream: it reads the log
            return woke, getattr(subscription, "state", "")

        assert asyncio.run(scenario()) == (True, "lost")
        notifier.notify(USER, RUN, 1)  # never raises into the writer
        assert notifier.flush(5)
    assert fake.published == [] and fake.delivered == 0


@pytest.mark.parametrize("retry_seconds", [0.0, 60.0])
def test_a_dropped_connection_wakes_the_stream_which_subscribes_again_after_retry_seconds(
    retry_seconds: float,
) -> None:
    with FakeEventApi() as fake:
        client = RealtimeClient(fake.api, signer_for(fake.api), retry_seconds=retry_seconds)
        channel = channel_of(USER, RUN)

        async def scenario() -> str:
            subscription = client.subscribe(channel)
            assert await subscription.wait(10)
            await asyncio.to_thread(fake.drop_connections)
            assert await subscription.wait(10)  # woken by the loss: the stream reads the log
            for _ in range(50):  # each wait is a poll interval of the stream's
                if subscription.state == "active":
                    break
                await subscription.wait(0.1)
            state = subscription.state
            subscription.close()
            return state

        state = asyncio.run(scenario())
    if retry_seconds == 0.0:
        assert state == "active" and len(fake.handshakes) == 2  # a new connection, subscribed again
    else:
        assert state == "lost" and len(fake.handshakes) == 1  # polling until the retry is due


@pytest.mark.parametrize("body", ["{}", '{"channel":"/runs/x"}'])
def test_the_fake_verifies_what_the_signer_signs(body: str) -> None:
    from tests.support.fake_appsync_events import verify

    with FakeEventApi() as fake:
        headers = signer_for(fake.api).headers(body)
        url = f"http://{fake.api.http_domain}/event"
        assert verify(headers, body, url)
        assert not verify(headers, body + " ", url)  # the body is signed
        assert not verify({**headers, "host": "elsewhere"}, body, url)  # and the host


def test_flush_notifications_sends_what_is_pending_before_a_handler_returns() -> None:
    from stepline.aws.appsync_events import flush_notifications

    with FakeEventApi() as fake:
        notifier = _notifier(fake)
        for seq in range(1, 40):  # a step's appends: coalesced while a publish is in flight
            notifier.notify(USER, RUN, seq)
        flush_notifications()
        assert fake.published, "sent before the handler returned"
        seqs = [json.loads(e)["seq"] for p in fake.published for e in p.events]
        assert seqs[-1] == 39 and seqs == sorted(set(seqs)), "the highest seq last, none twice"


def test_a_worker_invocation_sends_what_it_queued_before_it_returns_even_when_it_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from stepline.aws.wiring import services_from_env, worker_handler
    from stepline.runtime.handle_end import fail_run_handler
    from stepline.runtime.handling import StepFailed

    class Context:
        function_name = "stepline-fail-run"
        memory_limit_in_mb = 256
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:stepline-fail-run"
        aws_request_id = "req-1"

    for name in ("STEPLINE_AGENT_TABLE", "STEPLINE_EVENTS_TABLE", "STEPLINE_BUCKET"):
        monkeypatch.delenv(name, raising=False)  # the services cannot be built: the invocation fails
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Stepline")
    services_from_env.cache_clear()
    handler = worker_handler("stepline-fail-run", fail_run_handler)
    with FakeEventApi() as fake:
        notifier = _notifier(fake)
        notifier.notify(USER, RUN, 5)  # queued by the invocation's work
        real_flush = AppSyncEventsNotifier.flush
        flushed: list[bool] = []

        def recorded(self: AppSyncEventsNotifier, timeout: float = 2.0) -> bool:
            flushed.append(real_flush(self, timeout))
            return flushed[-1]

        monkeypatch.setattr(AppSyncEventsNotifier, "flush", recorded)
        with pytest.raises(StepFailed):
            handler({"runId": RUN, "userId": USER}, Context())
        assert True in flushed, "the handler flushed before it returned"
        assert [json.loads(e) for p in fake.published for e in p.events] == [{"seq": 5}]
