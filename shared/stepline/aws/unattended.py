"""Unattended runs on AWS: the schedule dispatcher, the callback sender, and their DynamoDB records.

- **Dispatcher** (`dispatch`): EventBridge Scheduler invokes it every minute with the tick's
  scheduled time; it runs `stepline.runtime.schedules.tick` at that time. Scheduler delivers at
  least once: a tick delivered twice computes the same occurrences, whose runs' ids are the same.
- **Callback sender** (`send_callbacks`): lifecycle events reach an SQS queue through a rule on
  the stack's bus; for each, the run's `callbackUrl` gets one attempt, recorded on the delivery
  item. A failed attempt leaves the message on the queue with its visibility set to the back-off
  (`ChangeMessageVisibility`), so the next attempt comes from the queue, never from the run.
- **Traces**: each run the dispatcher starts has its `stepline.start_run` span (the trigger, the
  schedule and its occurrence's time) and each attempt of the sender its `stepline.send_callback`
  span (`stepline.runtime.callback_traces`), in that run's trace; both functions export before
  they return.
- **Records** in the agent table, each under its user: a schedule's `last_seen`
  (`U#<owner>#SCHED#<agent>/<name>`) and each delivery with its attempts
  (`U#<user>#CB#<run>`, one item per event and URL).
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any, cast

from ..protocol._json import loads_strict
from ..runtime.callback_delivery import MAX_ATTEMPTS, new_delivery
from ..runtime.callback_traces import traced_attempt
from ..runtime.callback_urls import UrlPolicy
from ..runtime.deliveries import Delivery
from ..runtime.headless import unattended_of
from ..runtime.notifications import RunEvent
from ..runtime.schedules import Tick, tick
from ..runtime.services import Services
from ..runtime.traces import flush_invocation
from ..store.errors import NotFound
from ..store.records import RunRecord
from .dynamo_items import move_forward

__all__ = ["DynamoDeliveryLog", "DynamoScheduleState", "dispatch", "scheduled_now", "send_callbacks"]

GRACE_MS = 90_000
"""An occurrence up to a tick and a half late is on time (the dispatcher runs every minute)."""


class DynamoScheduleState:
    """`last_seen` per schedule, one item each; a write only ever moves it forward."""

    def __init__(self, client: Any, table: str) -> None:
        self._client, self._table = client, table

    @staticmethod
    def _key(owner: str, key: str) -> dict[str, Any]:
        return {"pk": {"S": f"U#{owner}#SCHED#{key}"}, "sk": {"S": "META"}}

    def last_seen(self, owner: str, key: str) -> int | None:
        item = self._client.get_item(TableName=self._table, Key=self._key(owner, key), ConsistentRead=True).get("Item")
        return None if item is None else int(item["lastSeen"]["N"])

    def mark_seen(self, owner: str, key: str, at: int) -> None:
        move_forward(self._client, self._table, self._key(owner, key), "lastSeen", at)  # unless a later tick wrote


class DynamoDeliveryLog:
    """Deliveries and their attempts (`DeliveryLog`), one item per event and URL."""

    def __init__(self, client: Any, table: str) -> None:
        self._client, self._table = client, table

    @staticmethod
    def _pk(user_id: str, run_id: str) -> dict[str, str]:
        return {"S": f"U#{user_id}#CB#{run_id}"}

    def get(self, delivery: Delivery) -> Delivery | None:
        key = {"pk": self._pk(delivery.user_id, delivery.run_id), "sk": {"S": f"{delivery.delivery_id}|{delivery.url}"}}
        item = self._client.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item")
        return None if item is None else Delivery.model_validate_json(item["record"]["S"])

    def save(self, delivery: Delivery) -> None:
        self._client.put_item(
            TableName=self._table,
            Item={
                "pk": self._pk(delivery.user_id, delivery.run_id),
                "sk": {"S": f"{delivery.delivery_id}|{delivery.url}"},
                "record": {"S": delivery.model_dump_json()},
                "state": {"S": delivery.state},
            },
        )

    def deliveries(self, user_id: str, run_id: str) -> list[Delivery]:
        pages = self._client.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": self._pk(user_id, run_id)},
            ConsistentRead=True,
        )
        found = [Delivery.model_validate_json(i["record"]["S"]) for page in pages for i in page.get("Items", [])]
        return sorted(found, key=lambda d: d.attempts[0].at if d.attempts else d.next_at)


def scheduled_now(event: dict[str, Any]) -> int:
    """The tick's time: the `scheduledTime` the schedule's input carries (now when there is none)."""
    stamp = event.get("scheduledTime")
    if isinstance(stamp, str):
        return int(dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    return int(time.time() * 1000)


def dispatch(services: Services, state: DynamoScheduleState, event: dict[str, Any]) -> Tick:
    """One dispatcher invocation: every due occurrence of the tick's time started (idempotently).

    Each run it starts has its `stepline.start_run` span in the run's own trace (a tick that starts
    nothing traces nothing); they are exported before the invocation returns.
    """
    try:
        return tick(services, state, now=scheduled_now(event), grace_ms=GRACE_MS)
    finally:
        flush_invocation(services)


def send_callbacks(
    services: Services,
    log: DynamoDeliveryLog,
    sqs: Any,
    queue_url: str,
    event: dict[str, Any],
    *,
    secret: str,
    policy: UrlPolicy,
    backoff_base: float = 10.0,
) -> dict[str, Any]:
    """An SQS batch of lifecycle events: one attempt each; the failed ones stay queued for the back-off."""
    failures: list[dict[str, str]] = []
    try:
        for record in cast(list[dict[str, Any]], event.get("Records", [])):
            found = _delivery(services, log, loads_strict(record["body"]))
            if found is None or found[1].state != "pending":
                continue
            run, delivery = found
            now = services.clock()
            tried = traced_attempt(
                services, run, delivery, secret=secret, policy=policy, now=now, backoff_base=backoff_base
            )
            log.save(tried)
            if tried.state == "pending" and len(tried.attempts) < MAX_ATTEMPTS:
                wait = max(0, min((tried.next_at - now) // 1000, 43_200))  # SQS allows 12 hours at most
                sqs.change_message_visibility(
                    QueueUrl=queue_url, ReceiptHandle=record["receiptHandle"], VisibilityTimeout=int(wait)
                )
                failures.append({"itemIdentifier": record["messageId"]})
    finally:
        flush_invocation(services)
    return {"batchItemFailures": failures}


def _delivery(services: Services, log: DynamoDeliveryLog, message: Any) -> tuple[RunRecord, Delivery] | None:
    """The run and delivery an EventBridge event asks for (None: its run has no callback, or is gone)."""
    event = RunEvent(detail_type=message["detail-type"], detail=message["detail"])
    try:
        run = services.store.get_run(str(event.detail["userId"]), str(event.detail["runId"]))
    except NotFound:
        return None
    url = unattended_of(run).get("callbackUrl")
    if not isinstance(url, str):
        return None
    fresh = new_delivery(event, url, now=services.clock())
    return run, log.get(fresh) or fresh
