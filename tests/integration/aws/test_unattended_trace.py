"""The schedule dispatcher and the callback senders join the run's trace, on moto.

Their telemetry batches spans for an hour (the schedule delay), so a span is in the exporter only
when the function exported before it returned, as a Lambda invocation must (its environment is
frozen right after). A run the dispatcher starts has its start span in the run's own trace, as a
child of the run's root, saying which schedule and occurrence started it; each attempt of the
callback sender is a span of the run's trace with the receiver's status. No span carries the
prompt, the callback URL or the notice's body; names and attributes follow the conventions.
`stepline dev`'s outbox sends the same spans (its batch thread exports them, so the test flushes).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from stepline.agent.definition import Agent
from stepline.agent.loading import AgentSet
from stepline.agent.unattended import Schedule
from stepline.aws.unattended import DynamoDeliveryLog, DynamoScheduleState, dispatch, send_callbacks
from stepline.llm.scripted import ScriptedModel
from stepline.local.callbacks import Outbox
from stepline.runtime.callback_urls import UrlPolicy
from stepline.runtime.headless import HeadlessStart, start_headless
from stepline.runtime.notifications import RunEvent, run_ended
from stepline.runtime.services import Services
from stepline.store.records import RunRecord
from stepline.tracing.context import RunTrace
from stepline.tracing.run_telemetry import PresetIds, RunTelemetry
from tests.support.dynamo_store import TABLES, make_dynamo_store
from tests.support.semconv import span_problems
from tests.unattended.dev_process import receiver

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()
PROMPT = "Write the confidential nightly report."
NIGHTLY = Schedule(name="nightly", cron="0 2 * * *", timezone="Europe/Paris", input=PROMPT, owner="ops")
HOUR_MS = 3_600_000


@dataclass
class Traced:
    services: Services
    client: Any
    spans: InMemorySpanExporter

    def finished(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name == name]


@pytest.fixture
def traced() -> Iterator[Traced]:
    spans = InMemorySpanExporter()
    provider = TracerProvider(id_generator=PresetIds())
    provider.add_span_processor(BatchSpanProcessor(spans, schedule_delay_millis=HOUR_MS))  # only a flush exports
    telemetry = RunTelemetry(provider, flush_each_invocation=True)
    with mock_aws():
        store, _ = make_dynamo_store()
        agent = Agent(name="reports", model=ScriptedModel([]), schedules=[NIGHTLY])
        services = Services(store=store, agents=AgentSet.single(agent), telemetry=telemetry)
        yield Traced(services, boto3.client("dynamodb", region_name="us-east-1"), spans)  # pyright: ignore[reportUnknownMemberType]
    provider.shutdown()


def _root_of(run: RunRecord) -> RunTrace:
    run_trace = RunTrace.parse(run.trace)
    assert run_trace is not None
    return run_trace


def _in_run_trace(span: ReadableSpan, run: RunRecord) -> bool:
    root = _root_of(run)
    assert span.context is not None and span.parent is not None
    return (f"{span.context.trace_id:032x}", f"{span.parent.span_id:016x}") == (root.trace_id, root.span_id)


def _text(spans: list[ReadableSpan]) -> str:
    return json.dumps([{"name": s.name, "attributes": dict(s.attributes or {})} for s in spans], default=str)


def test_a_run_the_dispatcher_starts_has_its_start_in_the_run_s_trace_exported_before_it_returns(
    traced: Traced,
) -> None:
    state = DynamoScheduleState(traced.client, TABLES["AgentTable"])
    assert dispatch(traced.services, state, {"scheduledTime": "2031-01-15T00:59:00Z"}).started == []
    assert traced.spans.get_finished_spans() == ()  # a tick that starts nothing traces nothing
    tick = {"scheduledTime": "2031-01-15T01:00:00Z"}  # 02:00 in Paris
    (started,) = dispatch(traced.services, state, tick).started
    (start,) = traced.finished("stepline.start_run")  # exported already: the batch would wait an hour
    run = traced.services.store.get_run("ops", started.run.run_id)
    assert _in_run_trace(start, run) and start.parent is not None and start.parent.is_remote
    attributes = dict(start.attributes or {})
    assert attributes["stepline.run_id"] == run.run_id and attributes["gen_ai.agent.name"] == "reports"
    assert attributes["stepline.trigger"] == "schedule"
    assert attributes["stepline.schedule.name"] == "nightly"
    assert attributes["stepline.schedule.scheduled_at"] == "2031-01-15T01:00:00Z"
    # The same tick delivered again finds its run: nothing new is started, nothing new is traced.
    state.mark_seen("ops", "reports/nightly", 0)
    traced.client.delete_item(
        TableName=TABLES["AgentTable"], Key={"pk": {"S": "U#ops#SCHED#reports/nightly"}, "sk": {"S": "META"}}
    )
    dispatch(traced.services, state, {"scheduledTime": "2031-01-15T00:59:00Z"})
    (again,) = dispatch(traced.services, state, tick).started
    assert again.replayed and len(traced.finished("stepline.start_run")) == 1
    finished = list(traced.spans.get_finished_spans())
    assert span_problems(finished) == []
    assert PROMPT not in _text(finished)


def _ended_with_callback(services: Services, url: str) -> tuple[RunRecord, dict[str, Any]]:
    """A run started with `url` as its callback, and the SQS batch of its end's lifecycle event."""
    start = HeadlessStart(
        agent="reports",
        message={"id": "m1", "role": "user", "parts": [{"type": "text", "text": PROMPT}]},
        callback_url=url,
    )
    run = start_headless(services, "ops", start).run
    ended = run.model_copy(update={"status": "completed", "ended_at": run.started_at + 1})
    keyed = run_ended(ended)
    assert keyed is not None
    message = {"detail-type": keyed[1].detail_type, "detail": keyed[1].detail}
    return run, {"Records": [{"messageId": "q1", "receiptHandle": "h1", "body": json.dumps(message)}]}


class Sqs:
    def change_message_visibility(self, **options: Any) -> None:
        del options


def test_each_callback_attempt_is_a_span_of_the_run_s_trace_with_the_receiver_s_status(traced: Traced) -> None:
    log = DynamoDeliveryLog(traced.client, TABLES["AgentTable"])
    policy = UrlPolicy(allow_loopback=True)  # the receiver is on this machine
    with receiver([500]) as hook:
        run, batch = _ended_with_callback(traced.services, hook.url)
        traced.spans.clear()
        answers = [
            send_callbacks(traced.services, log, Sqs(), "queue", batch, secret=SECRET, policy=policy) for _ in range(2)
        ]
    assert [a["batchItemFailures"] for a in answers] == [[{"itemIdentifier": "q1"}], []]
    assert len(hook.received) == 2
    first, second = traced.finished("stepline.send_callback")  # each exported before its call returned
    assert _in_run_trace(first, run) and _in_run_trace(second, run)
    failed, delivered = dict(first.attributes or {}), dict(second.attributes or {})
    assert (failed["stepline.callback.attempt"], failed["stepline.callback.state"]) == (1, "pending")
    assert (failed["http.response.status_code"], failed["error.type"]) == (500, "500")
    assert first.status.status_code == StatusCode.ERROR
    assert (delivered["stepline.callback.attempt"], delivered["stepline.callback.state"]) == (2, "delivered")
    assert delivered["http.response.status_code"] == 200 and "error.type" not in delivered
    assert second.status.status_code != StatusCode.ERROR
    assert failed["stepline.callback.type"] == "run.completed" and failed["stepline.run_id"] == run.run_id
    finished = list(traced.spans.get_finished_spans())
    assert span_problems(finished) == []
    text = _text(finished)
    for private in (hook.url, "127.0.0.1", "/hooks/stepline", PROMPT, hook.received[0].body.decode()):
        assert private not in text, private


def test_a_refused_callback_url_is_a_failed_attempt_span_without_the_url(traced: Traced) -> None:
    log = DynamoDeliveryLog(traced.client, TABLES["AgentTable"])
    run, batch = _ended_with_callback(traced.services, "https://10.9.9.9/private/hook?token=abc")
    traced.spans.clear()
    send_callbacks(traced.services, log, Sqs(), "queue", batch, secret=SECRET, policy=UrlPolicy())
    (attempt,) = traced.finished("stepline.send_callback")
    attributes = dict(attempt.attributes or {})
    assert _in_run_trace(attempt, run) and attributes["error.type"] == "refused"
    assert "http.response.status_code" not in attributes
    assert "10.9.9.9" not in _text([attempt]) and "token=abc" not in _text([attempt])


def test_the_start_span_names_what_started_the_run_and_never_its_metadata(traced: Traced) -> None:
    message = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": PROMPT}]}
    hooked = HeadlessStart(
        agent="reports", message=message, trigger="hook", metadata={"hook": "ticket", "customer": "ACME-secret"}
    )
    posted = HeadlessStart(agent="reports", message=message, metadata={"customer": "ACME-secret"})
    runs = [start_headless(traced.services, "ops", start).run for start in (hooked, posted)]
    assert traced.services.telemetry is not None
    traced.services.telemetry.flush()  # what the API function does once its response is built
    hook_span, api_span = traced.finished("stepline.start_run")
    assert _in_run_trace(hook_span, runs[0]) and _in_run_trace(api_span, runs[1])
    hook_attributes, api_attributes = dict(hook_span.attributes or {}), dict(api_span.attributes or {})
    assert (hook_attributes["stepline.trigger"], hook_attributes["stepline.hook.name"]) == ("hook", "ticket")
    assert api_attributes["stepline.trigger"] == "api" and "stepline.hook.name" not in api_attributes
    assert "ACME-secret" not in _text([hook_span, api_span]) and PROMPT not in _text([hook_span, api_span])


def test_stepline_dev_s_outbox_sends_the_same_spans_in_the_run_s_trace(traced: Traced) -> None:
    with receiver([500]) as hook:
        run, batch = _ended_with_callback(traced.services, hook.url)
        message = json.loads(batch["Records"][0]["body"])
        policy = UrlPolicy(allow_loopback=True)
        outbox = Outbox(None, SECRET, policy, traced.services.clock, backoff_base=0.001, services=traced.services)
        try:
            outbox.enqueue(run_ended_event(message), hook.url)
            traced.spans.clear()
            assert outbox.run_due() == 1
        finally:
            outbox.stop()
    assert traced.services.telemetry is not None
    traced.services.telemetry.flush()
    (attempt,) = traced.finished("stepline.send_callback")
    attributes = dict(attempt.attributes or {})
    assert _in_run_trace(attempt, run)
    assert (attributes["http.response.status_code"], attributes["error.type"]) == (500, "500")
    assert hook.url not in _text([attempt]) and span_problems([attempt]) == []


def run_ended_event(message: dict[str, Any]) -> RunEvent:
    return RunEvent(detail_type=message["detail-type"], detail=message["detail"])
