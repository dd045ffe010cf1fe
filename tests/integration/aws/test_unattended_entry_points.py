"""The schedule dispatcher's and the callback sender's Lambda entry points, from the environment
template.yaml gives them, on moto: services built at the first invocation, Powertools' outcome line
and metric per invocation (ids only), and the work itself (one run per occurrence; a refused
callback left on the real queue for its back-off)."""

from __future__ import annotations

import base64
import importlib.util
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import boto3
import pytest
from moto import mock_aws

from stepline.aws.dynamodb import DynamoStore
from stepline.aws.unattended import DynamoDeliveryLog
from stepline.aws.wiring import services_from_env
from stepline.local.resources import create_tables
from stepline.runtime.headless import HeadlessStart, start_headless
from stepline.runtime.notifications import run_ended

REPO = Path(__file__).resolve().parents[3]
SECRET = "whsec_" + base64.b64encode(b"entry-point-callback-key-32bytes").decode()
ENV = {
    "STEPLINE_AGENT_TABLE": "stepline-agent",
    "STEPLINE_EVENTS_TABLE": "stepline-events",
    "STEPLINE_BUCKET": "stepline-artifacts",
    "STEPLINE_AGENT": "tests.unattended.worker_agents:AGENTS",  # reports: a nightly schedule owned by ops
    "STEPLINE_TRACING": "off",
    "POWERTOOLS_METRICS_NAMESPACE": "Stepline",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@dataclass
class Context:
    function_name: str
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:entry"
    aws_request_id: str = "req-1"


def _client(service: str) -> Any:
    return cast(Any, boto3.client(service, region_name="us-east-1"))  # pyright: ignore[reportUnknownMemberType]


def _entry_point(directory: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"app_{directory}", REPO / "shared/stepline/stack/functions" / directory / "app.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # no AWS call at import
    return module


def _lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoStore]:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    services_from_env.cache_clear()  # this process's services are built from this environment
    with mock_aws():
        create_tables(_client("dynamodb"), {"AgentTable": "stepline-agent", "EventsTable": "stepline-events"})
        _client("s3").create_bucket(Bucket="stepline-artifacts")
        yield DynamoStore(_client("dynamodb"), agent_table="stepline-agent", events_table="stepline-events")
    services_from_env.cache_clear()


def test_the_dispatcher_entry_point_starts_one_run_per_occurrence_and_logs_ids_only(
    aws: DynamoStore, capsys: pytest.CaptureFixture[str]
) -> None:
    module = _entry_point("schedule_dispatch")
    context = Context("stepline-schedule-dispatch")
    assert module.handler({"scheduledTime": "2031-01-15T00:59:00Z"}, context) == {"started": []}  # first sight
    tick = {"scheduledTime": "2031-01-15T01:00:00Z"}  # 02:00 in Paris: the nightly occurrence
    (run_id,) = module.handler(tick, context)["started"]
    assert module.handler(tick, context) == {"started": []}  # delivered again: the same run, none new
    run = aws.get_run("ops", run_id)
    assert (run.agent, run.trigger) == ("reports", "automation")
    records = _lines(capsys.readouterr().out)
    done = [r for r in records if r.get("message") == "worker done"]
    assert len(done) == 3 and all(r["function_request_id"] == "req-1" for r in done)
    assert {r["service"] for r in done} == {"stepline-schedule-dispatch"}
    assert [r["ScheduleDispatch"] for r in records if "_aws" in r] == [[1.0]] * 3
    assert "Write the nightly report." not in json.dumps(records)  # the prompt never reaches a log


def test_the_sender_entry_point_records_a_refused_attempt_and_leaves_the_message_queued(
    aws: DynamoStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = _client("secretsmanager").create_secret(Name="callback-key", SecretString=SECRET)
    queue_url = _client("sqs").create_queue(QueueName="callbacks")["QueueUrl"]
    monkeypatch.setenv("STEPLINE_CALLBACK_SECRET_ARN", secret["ARN"])
    monkeypatch.setenv("STEPLINE_CALLBACK_QUEUE_URL", queue_url)
    services = services_from_env()
    start = HeadlessStart(
        agent="reports",
        message={"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Go."}]},
        callback_url="https://10.20.30.40/hook",  # a private address: refused at every attempt
    )
    run = start_headless(services, "ops", start).run
    keyed = run_ended(run.model_copy(update={"status": "completed", "ended_at": run.started_at + 1}))
    assert keyed is not None
    _client("sqs").send_message(
        QueueUrl=queue_url, MessageBody=json.dumps({"detail-type": keyed[1].detail_type, "detail": keyed[1].detail})
    )
    (message,) = _client("sqs").receive_message(QueueUrl=queue_url, VisibilityTimeout=0)["Messages"]
    record = {"messageId": message["MessageId"], "receiptHandle": message["ReceiptHandle"], "body": message["Body"]}
    module = _entry_point("callback_sender")
    answer = module.handler({"Records": [record]}, Context("stepline-callback-sender"))
    assert answer == {"batchItemFailures": [{"itemIdentifier": message["MessageId"]}]}
    (delivery,) = DynamoDeliveryLog(_client("dynamodb"), "stepline-agent").deliveries("ops", run.run_id)
    (attempt,) = delivery.attempts
    assert delivery.state == "pending" and attempt.status is None and "private" in (attempt.error or "")
    # Its back-off is the message's visibility now: not receivable again at once.
    assert "Messages" not in _client("sqs").receive_message(QueueUrl=queue_url)
    records = _lines(capsys.readouterr().out)
    (done,) = [r for r in records if r.get("message") == "worker done"]
    assert done["service"] == "stepline-callback-sender"
    assert "10.20.30.40" not in json.dumps(records)
