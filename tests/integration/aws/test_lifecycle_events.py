"""Run lifecycle events on moto's EventBridge: a rule on the stack's bus delivers them to an SQS queue.

The real ASL on moto's Step Functions interpreter, the handlers in process; the events are read
back from the queue the rule targets, as a team's Slack or email rule would receive them. Each
test asserts exactly one event per transition — also when a worker dies and Step Functions runs
it again — and that no event carries the tool input, a message's text or a secret.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3

from stepline.aws.events import EventBridgeNotifier
from stepline.llm.scripted import ScriptedModel
from stepline.loop.tools import Tool
from stepline.runtime.approval_links import ApprovalLinks
from stepline.runtime.ending import abort_run, fail_run, finalize_run
from stepline.runtime.notifications import RunEvent
from stepline.runtime.waits import await_input, decide
from tests.integration.aws.test_state_machine import Crash
from tests.support.local_aws import LocalAws, local_aws
from tests.support.runs import USER, Counted, begin, call_step, text_step, wait_for_token

BUS = "stepline-test-events"
SECRET_PATH = "/srv/private/payroll.csv"
KEY = b"k" * 32


class Bus:
    """The bus, a rule matching every Stepline event, and the queue it targets."""

    def __init__(self) -> None:
        events, sqs = boto3.client("events"), boto3.client("sqs")
        events.create_event_bus(Name=BUS)
        self.queue = sqs.create_queue(QueueName="stepline-notifications")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=self.queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name="all-stepline", EventBusName=BUS, EventPattern=json.dumps({"source": ["stepline"]}))
        events.put_targets(Rule="all-stepline", EventBusName=BUS, Targets=[{"Id": "queue", "Arn": arn}])
        self._sqs = sqs
        self.received: list[dict[str, Any]] = []

    def read(self) -> list[dict[str, Any]]:
        """Everything delivered so far (the queue drained into `received`)."""
        while messages := self._sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10).get("Messages"):
            for message in messages:
                self.received.append(json.loads(message["Body"]))
                self._sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])
        return self.received

    def types(self) -> list[str]:
        return [e["detail-type"] for e in self.read()]


class DiesBeforePublishing:
    """The notifier of a process that dies before its first `PutEvents` of `detail_type` returns."""

    def __init__(self, inner: EventBridgeNotifier, detail_type: str) -> None:
        self._inner = inner
        self._detail_type = detail_type
        self.died = False

    def publish(self, event: RunEvent) -> None:
        if event.detail_type == self._detail_type and not self.died:
            self.died = True
            raise Crash(f"process died publishing {self._detail_type}")
        self._inner.publish(event)


@contextmanager
def on_eventbridge(model: ScriptedModel, **options: Any) -> Iterator[tuple[LocalAws, Bus]]:
    with local_aws(model, **options) as aws:
        bus = Bus()
        aws.services.notifier = EventBridgeNotifier(boto3.client("events"), bus=BUS)
        aws.services.approval_links = ApprovalLinks(KEY)
        yield aws, bus


def _no_private_data(events: list[dict[str, Any]]) -> None:
    text = json.dumps(events)
    for private in (SECRET_PATH, "Done, the file is gone.", KEY.decode()):  # tool input, answer text, the key
        assert private not in text


def test_an_approved_run_publishes_its_request_with_a_working_link_then_its_completion() -> None:
    delete = Counted("delete_file", {"deleted": True})
    model = ScriptedModel.from_script(
        [call_step("delete_file", json.dumps({"path": SECRET_PATH})), text_step("Done, the file is gone.")]
    )
    with on_eventbridge(model, tools=[delete.tool], tool_approval={"delete_file": "user-approval"}) as (aws, bus):
        run_id = begin(aws)
        approval = aws.services.store.get_approval(USER, wait_for_token(aws, "c1"))
        (requested,) = bus.read()
        token = requested["detail"]["decision"]["token"]
        claims, mac = ApprovalLinks(KEY).claims(token)
        ApprovalLinks(KEY).check(approval, claims, mac, now=aws.services.clock())  # the link decides this approval
        decide(aws.services, USER, approval.approval_id, approved=True, reason=None, decided_by="link")
        assert aws.wait_execution(run_id) == "SUCCEEDED"
        assert bus.types() == ["Approval Requested", "Run Completed"]
        # A retried wait or finalize (Step Functions runs a task again after a lost answer) adds nothing.
        await_input(aws.services, USER, run_id, "a-stale-token")
        finalize_run(aws.services, USER, run_id)
        events = bus.read()
        history = aws.workflow.history(run_id)
    assert [e["detail-type"] for e in events] == ["Approval Requested", "Run Completed"]
    assert all(e["source"] == "stepline" for e in events)
    assert requested["detail"]["approvalId"] == approval.approval_id
    assert requested["detail"]["toolName"] == "delete_file" and "input" not in requested["detail"]
    assert requested["detail"]["decision"]["path"] == f"/api/approval-links/{approval.approval_id}"
    completed = events[1]["detail"]
    assert (completed["runId"], completed["status"], completed["finishReason"]) == (run_id, "completed", "stop")
    assert len({e["detail"]["eventId"] for e in events}) == 2
    _no_private_data(events)
    # Each model step that streamed output reports its time to first token (the dashboard's metric).
    outputs = [e["taskSucceededEventDetails"]["output"] for e in history if e["type"] == "TaskSucceeded"]
    assert sum('"firstOutputMs"' in o for o in outputs) == 2


def test_a_step_that_dies_before_publishing_its_approval_request_publishes_it_once_on_the_retry() -> None:
    delete = Counted("delete_file", {"deleted": True})
    model = ScriptedModel.from_script([call_step("delete_file", json.dumps({"path": SECRET_PATH})), text_step("ok")])
    with on_eventbridge(model, tools=[delete.tool], tool_approval={"delete_file": "user-approval"}) as (aws, bus):
        dying = DiesBeforePublishing(EventBridgeNotifier(boto3.client("events"), bus=BUS), "Approval Requested")
        aws.services.notifier = dying
        run_id = begin(aws)
        approval_id = wait_for_token(aws, "c1")  # the retried step, then the wait, announced it
        requested = list(bus.read())
        decide(aws.services, USER, approval_id, approved=False, reason="no")
        assert aws.wait_execution(run_id) == "SUCCEEDED"
        events = bus.read()
    assert dying.died
    assert [e["detail-type"] for e in requested] == ["Approval Requested"]
    assert [e["detail-type"] for e in events] == ["Approval Requested", "Run Completed"]
    assert delete.runs == 0


def test_a_question_and_a_failure_and_an_abort_are_each_one_event() -> None:
    ask = Tool(name="ask_user_question", input_schema={"type": "object"})
    # The second run's step streams slowly, so the FailRun below ends it while it streams, whatever
    # the machine's load (a step that ended first would fail the run with its own error).
    slow = {"delayMs": 100, "parts": [{"type": "text-start", "id": "t"}]}
    slow["parts"] += [{"type": "text-delta", "id": "t", "delta": "x"} for _ in range(100)]
    question = ScriptedModel.from_script([call_step("ask_user_question", '{"question":"Which file?"}', "q1"), slow])
    with on_eventbridge(question, tools=[ask]) as (aws, bus):
        asked = begin(aws)
        aws.wait_run(USER, asked, lambda r: r.status == "waiting_user" and r.task_token is not None)
        abort_run(aws.services, USER, asked)
        abort_run(aws.services, USER, asked)  # a second abort (another tab) changes nothing
        failing = begin(aws)
        aws.wait_run(USER, failing, lambda r: r.status == "running")
        fail_run(aws.services, USER, failing, "the model said: payroll test", code="ModelError")
        fail_run(aws.services, USER, failing, "again")  # a retried FailRun
        published = bus.read()
    # The FailRun and the step it cut may both announce the end before either records it: a repeat
    # carries the same eventId (what consumers drop), never a second, different event.
    first = {e["detail"]["eventId"]: e for e in reversed(published)}
    events = sorted(first.values(), key=published.index)
    assert all(e["detail-type"] == first[e["detail"]["eventId"]]["detail-type"] for e in published)
    assert [(e["detail-type"], e["detail"]["runId"]) for e in events] == [
        ("Question Asked", asked),
        ("Run Aborted", asked),
        ("Run Failed", failing),
    ]
    assert events[0]["detail"]["toolCalls"] == [{"toolCallId": "q1", "toolName": "ask_user_question"}]
    assert events[1]["detail"]["reason"] == "user_cancelled"
    assert events[2]["detail"]["errorCode"] == "ModelError" and "payroll" not in json.dumps(events)
    _no_private_data(published)
