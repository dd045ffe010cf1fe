"""The AWS side of unattended runs on moto: the schedule dispatcher, the callback sender, hook secrets."""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from stepline.agent.definition import Agent
from stepline.agent.loading import AgentSet
from stepline.agent.unattended import Schedule
from stepline.aws.unattended import DynamoDeliveryLog, DynamoScheduleState, dispatch, send_callbacks
from stepline.aws.unattended_wiring import SecretsHookSecrets
from stepline.llm.scripted import ScriptedModel
from stepline.runtime.callback_urls import UrlPolicy
from stepline.runtime.headless import HeadlessStart, start_headless
from stepline.runtime.notifications import run_ended
from stepline.runtime.services import Services
from tests.support.dynamo_store import TABLES, make_dynamo_store

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()
NIGHTLY = Schedule(name="nightly", cron="0 2 * * *", timezone="Europe/Paris", input="Report.", owner="ops")


@pytest.fixture
def aws() -> Iterator[tuple[Services, Any]]:
    with mock_aws():
        store, _ = make_dynamo_store()
        agent = Agent(name="reports", model=ScriptedModel([]), schedules=[NIGHTLY])
        yield (
            Services(store=store, agents=AgentSet.single(agent)),
            boto3.client("dynamodb", region_name="us-east-1"),
        )


def _ms(at: dt.datetime) -> int:
    return int(at.timestamp() * 1000)


def test_the_dispatcher_starts_one_run_per_occurrence_however_often_a_tick_is_delivered(
    aws: tuple[Services, Any],
) -> None:
    services, client = aws
    state = DynamoScheduleState(client, TABLES["AgentTable"])
    first = {"scheduledTime": "2031-01-15T00:59:00Z"}  # seen for the first time: counting starts
    tick = {"scheduledTime": "2031-01-15T01:00:00Z"}  # 02:00 in Paris
    assert dispatch(services, state, first).started == []
    runs = [dispatch(services, state, tick).started for _ in range(2)]
    late = DynamoScheduleState(client, TABLES["AgentTable"])
    late.mark_seen("ops", "reports/nightly", _ms(dt.datetime(2031, 1, 15, 0, 59, tzinfo=dt.UTC)))  # older: ignored
    assert state.last_seen("ops", "reports/nightly") == _ms(dt.datetime(2031, 1, 15, 1, 0, tzinfo=dt.UTC))
    (run,) = runs[0]
    assert runs[1] == []  # the same tick again finds nothing new
    again = dispatch(
        services, DynamoScheduleState(client, TABLES["AgentTable"]), {"scheduledTime": "2031-01-15T01:00:30Z"}
    )
    assert again.started == []
    state.mark_seen("ops", "reports/nightly", 0)  # even a state that went back replays into the same run
    client.delete_item(
        TableName=TABLES["AgentTable"], Key={"pk": {"S": "U#ops#SCHED#reports/nightly"}, "sk": {"S": "META"}}
    )
    state.mark_seen("ops", "reports/nightly", _ms(dt.datetime(2031, 1, 15, 0, 59, tzinfo=dt.UTC)))
    (replayed,) = dispatch(services, state, tick).started
    assert replayed.replayed and replayed.run.run_id == run.run.run_id
    stored = services.store.get_run("ops", run.run.run_id)
    assert stored.conversation_id == run.run.conversation_id and stored.agent == "reports"


class FakeSqs:
    def __init__(self) -> None:
        self.visibility: list[int] = []

    def change_message_visibility(self, **options: Any) -> None:
        self.visibility.append(options["VisibilityTimeout"])


def test_the_sender_records_each_attempt_and_leaves_a_failed_one_on_the_queue(aws: tuple[Services, Any]) -> None:
    services, client = aws
    start = HeadlessStart(
        agent="reports",
        message={"id": "m1", "role": "user", "parts": [{"type": "text", "text": "x"}]},
        callback_url="https://10.9.9.9/hook",
    )
    run = start_headless(services, "ops", start).run
    services.store.request_abort("ops", run.run_id, reason="test")
    log, sqs = DynamoDeliveryLog(client, TABLES["AgentTable"]), FakeSqs()
    ended = services.store.get_run("ops", run.run_id).model_copy(update={"status": "aborted", "ended_at": 1})
    keyed = run_ended(ended)
    assert keyed is not None
    message = {"detail-type": keyed[1].detail_type, "detail": keyed[1].detail}
    batch = {"Records": [{"messageId": "q1", "receiptHandle": "h1", "body": json.dumps(message)}]}
    answers = [send_callbacks(services, log, sqs, "queue", batch, secret=SECRET, policy=UrlPolicy()) for _ in range(2)]
    (delivery,) = log.deliveries("ops", run.run_id)
    assert [a["batchItemFailures"] for a in answers] == [[{"itemIdentifier": "q1"}]] * 2
    assert len(delivery.attempts) == 2 and all("private" in (a.error or "") for a in delivery.attempts)
    assert sqs.visibility == [10, 20]  # the back-off, set on the message
    assert log.deliveries("eve", run.run_id) == []


def test_hook_secrets_are_read_from_secrets_manager_by_name() -> None:
    with mock_aws():
        client = boto3.client("secretsmanager", region_name="us-east-1")
        client.create_secret(Name="stepline/hooks/reports/ticket", SecretString=SECRET)
        client.create_secret(Name="stepline/hooks/reports/broken", SecretString="not base64!")
        secrets = SecretsHookSecrets(client, "stepline/hooks/")
        assert secrets.secret("reports", "ticket") == SECRET
        assert secrets.secret("reports", "missing") is None
        with pytest.raises(Exception, match="not base64"):
            secrets.secret("reports", "broken")
