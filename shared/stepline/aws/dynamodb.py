"""`DynamoStore`: the store port on DynamoDB (keys and indexes in docs/data-model.md).

Every item is `{pk, sk, kind, rev, data}` plus the index attributes its access patterns need;
`data` is the record's JSON (or, above the offload threshold, a pointer to the blob that holds it,
written first). An operation (`stepline.store.operations`) runs on a unit of work that reads with
strongly consistent reads and commits all its writes in one `TransactWriteItems`, each write
conditioned on `rev` being what was read (`attribute_not_exists(pk)` for a new item). When another
writer won, the transaction is cancelled and the operation runs again on fresh reads: this is how
an approval is decided exactly once, a tool call claimed once, and event seqs allocated without a
gap or a duplicate. `ClientRequestToken` is not used (moto ignores it, and conditions suffice).

The item layout is in `dynamo_items.py` and the unit of work in `dynamo_unit.py`; this module is
the store itself: encoding, retries under contention, and the port's reads and sweeps.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from ..protocol._json import dumps, loads_strict
from ..store.blobs import BlobRef
from ..store.errors import ConcurrentUpdate, Conflict, NotFound
from ..store.message_pages import StoredPage
from ..store.operations.common import DELTA_RETENTION_MS, event_records, live_run
from ..store.ports import FinishRun, Page
from ..store.records import (
    TERMINAL,
    ApprovalRecord,
    ArtifactRecord,
    CheckpointRecord,
    ConversationRecord,
    EventRecord,
    MessageRecord,
    NewEvent,
    RunRecord,
    StepRecordRow,
)
from ..store.redacting_unit import RedactingUnit
from ..store.redaction import ReasoningPolicy, Redactor
from ..store.run_slots import RunSlots
from ..store.transactional import TransactionalStore
from ..store.unit import Record, Unit
from ..store.unit_reads import UnitReads
from ..store.usage_counters import UsageCounters
from .cursors import decode_cursor, encode_cursor
from .dynamo_counters import DynamoCounters
from .dynamo_items import ACTIVE_RUN_KEYS, KIND_OF, KINDS, data_attribute, data_of, num_attr, record_fields, str_attr
from .dynamo_pages import MESSAGE_INLINE_BYTES, PagedRecords
from .dynamo_slots import DynamoSlots
from .dynamo_unit import DynamoUnit

__all__ = ["CHECKPOINT_OFFLOAD_BYTES", "DynamoStore"]

T = TypeVar("T")
MAX_ATTEMPTS = 40
TAILS = 10_000
"""How many runs' last written seq a store remembers (its appends' next seq without a read)."""


CHECKPOINT_OFFLOAD_BYTES = 8 * 1024
"""A checkpoint's or step record's JSON above this goes to a blob, its item keeping the pointer: cheaper from ~6 KB.

A checkpoint is written in the step-end transaction, 2 write units per started KB ($0.625 per
million units, us-east-1 on-demand); a blob costs one PUT ($0.005 per 1,000) plus the pointer's 2
units. A checkpoint holds the conversation's model messages,
so it grows every step (17 KB at step 4 and 64 KB at step 10 of bench/cost.py's run). It is read
only by the workers (a step's start, a fork), not by a client's stream. A step record is written in
the same transaction; the inspector's whole request every `KEYFRAME_EVERY`th step (27 KB at step 8
of that run) goes to a blob too, read by the next steps' writers and the run inspector only."""


class DynamoStore(TransactionalStore, UnitReads):
    """The store on two DynamoDB tables (and a blob store for large payloads).

    Example:
        store = DynamoStore(boto3.client("dynamodb"), agent_table="AgentTable", events_table="EventsTable",
                            blobs=S3BlobStore("my-bucket"))
    """

    def __init__(
        self,
        client: Any,
        *,
        agent_table: str,
        events_table: str,
        blobs: Any = None,
        offload_threshold: int = 64 * 1024,
        checkpoint_offload_threshold: int = CHECKPOINT_OFFLOAD_BYTES,
        message_inline_bytes: int = MESSAGE_INLINE_BYTES,
        delta_retention_ms: int = DELTA_RETENTION_MS,
        sleep: Callable[[float], None] = time.sleep,
        redactor: Redactor | None = None,
        reasoning: ReasoningPolicy = "keep",
    ) -> None:
        self._redactor = redactor or Redactor()
        self._reasoning: ReasoningPolicy = reasoning
        self.client = client
        self.agent_table = agent_table
        self.events_table = events_table
        self._blobs = blobs
        self._threshold = offload_threshold
        self._checkpoint_threshold = checkpoint_offload_threshold
        self.delta_retention_ms = delta_retention_ms
        self._sleep = sleep
        self._paged = PagedRecords(blobs, message_inline_bytes=message_inline_bytes) if blobs is not None else None
        self._tails: dict[tuple[str, str], int] = {}
        """The last seq this store appended per run: where its next append goes, unread."""
        self.counters: UsageCounters = DynamoCounters(client, table=agent_table)
        self.slots: RunSlots = DynamoSlots(client, table=agent_table)

    # -- encoding ----------------------------------------------------------------------------------

    def encode(self, record: Record, read_pages: list[StoredPage] | None = None) -> dict[str, Any]:
        """The item's `kind` and `data` (or `blob`); long message parts and checkpoint steps go to pages first."""
        if isinstance(record, MessageRecord) and self._paged is not None:
            data = self._paged.message_json(record, read_pages or [])
        elif isinstance(record, CheckpointRecord) and self._paged is not None:
            data = self._paged.checkpoint_json(record)
        else:
            data = dumps(record_fields(record))
        encoded: dict[str, Any] = {"kind": str_attr(KIND_OF[type(record)])}
        every_step = isinstance(record, CheckpointRecord | StepRecordRow)  # written at every step end
        threshold = self._checkpoint_threshold if every_step else self._threshold
        raw = data.encode()
        if self._blobs is not None and len(raw) > threshold:
            ref = self._blobs.put(record.user_id, raw, media_type="application/json")
            encoded["blob"] = str_attr(ref.model_dump_json(by_alias=True))
        else:
            encoded.update(data_attribute(raw))
        return encoded

    def decode(self, item: dict[str, Any], read_pages: list[StoredPage] | None = None) -> Any:
        """The record of an item; a paged message's pages are added to `read_pages`."""
        cls = KINDS[item["kind"]["S"]]
        if "blob" in item:
            raw = self._blobs.get(BlobRef.model_validate_json(item["blob"]["S"])).decode()
        else:
            raw = data_of(item)
        if cls is CheckpointRecord and self._paged is not None:
            return self._paged.load_checkpoint(loads_strict(raw))
        if cls is MessageRecord and self._paged is not None:
            record, pages = self._paged.load_message(loads_strict(raw))
            if read_pages is not None:
                read_pages.extend(pages)
            return record
        return cls.model_validate(loads_strict(raw))

    # -- plumbing ----------------------------------------------------------------------------------

    def query_all(self, table: str, pk: str, prefix: str, *, start: str | None = None) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        condition = "pk = :pk AND begins_with(sk, :prefix)" if prefix else "pk = :pk"
        values = {":pk": str_attr(pk), ":prefix": str_attr(prefix)} if prefix else {":pk": str_attr(pk)}
        if start is not None:  # the keys from `start` to the prefix's last (U+FFFF sorts after any key character)
            condition = "pk = :pk AND sk BETWEEN :start AND :end"
            values = {":pk": str_attr(pk), ":start": str_attr(start), ":end": str_attr(f"{prefix}\uffff")}
        kwargs: dict[str, Any] = {
            "TableName": table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ConsistentRead": True,
        }
        while True:
            page = self.client.query(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _do(self, operation: Callable[[DynamoUnit], T]) -> T:
        for attempt in range(MAX_ATTEMPTS):
            unit = DynamoUnit(self)
            result = operation(cast(DynamoUnit, RedactingUnit(unit, self._redactor, self._reasoning)))
            try:
                unit.commit()
            except ConcurrentUpdate:
                self._sleep(random.uniform(0, min(0.05, 0.002 * 2**attempt)))
                continue
            return result
        raise ConcurrentUpdate(f"gave up after {MAX_ATTEMPTS} attempts under contention")

    def _peek(self, read: Callable[[Unit], T]) -> T:
        return read(DynamoUnit(self))

    def _index(
        self,
        index: str,
        pk_name: str,
        pk: str,
        *,
        forward: bool = True,
        upper: str | None = None,
        limit: int | None = None,
        start: Any = None,
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "TableName": self.agent_table,
            "IndexName": index,
            "KeyConditionExpression": f"{pk_name} = :pk" + (f" AND {index.lower()}sk < :upper" if upper else ""),
            "ExpressionAttributeValues": {":pk": str_attr(pk), **({":upper": str_attr(upper)} if upper else {})},
            "ScanIndexForward": forward,
        }
        if limit is not None:
            kwargs["Limit"] = limit
        if start is not None:
            kwargs["ExclusiveStartKey"] = start
        return self.client.query(**kwargs)

    def _records(self, items: list[dict[str, Any]]) -> list[Any]:
        """Index items may be projections: read the records themselves from the base table."""
        unit = DynamoUnit(self)
        out: list[Any] = []
        for item in items:
            full = self.client.get_item(TableName=self.agent_table, Key={"pk": item["pk"], "sk": item["sk"]}).get(
                "Item"
            )
            if full is not None:
                out.append(unit.remember(self.agent_table, full))
        return out

    # -- the port: conversations and messages ------------------------------------------------------

    def list_conversations(
        self, user_id: str, *, limit: int = 20, cursor: str | None = None
    ) -> Page[ConversationRecord]:
        index_pk = f"U#{user_id}#CONVS"
        start = decode_cursor(cursor, index_pk=index_pk, user_id=user_id) if cursor else None
        page = self._index("GSI1", "gsi1pk", index_pk, forward=False, limit=limit, start=start)
        items = page.get("Items", [])
        unit = DynamoUnit(self)
        records = [unit.remember(self.agent_table, item) for item in items]
        return Page(records, encode_cursor(page.get("LastEvaluatedKey")))

    def list_messages(
        self, user_id: str, conversation_id: str, *, after_seq: int = 0, limit: int = 100
    ) -> Page[MessageRecord]:
        self.get_conversation(user_id, conversation_id)
        page = self.client.query(
            TableName=self.agent_table,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :low AND :high",
            ExpressionAttributeValues={
                ":pk": str_attr(f"U#{user_id}#C#{conversation_id}"),
                ":low": str_attr(f"M#{after_seq + 1:010d}"),
                ":high": str_attr("M#9999999999"),
            },
            ConsistentRead=True,
            Limit=limit + 1,
        )
        unit = DynamoUnit(self)
        records = [unit.remember(self.agent_table, item) for item in page.get("Items", [])]
        more = len(records) > limit
        records = records[:limit]
        return Page(records, str(records[-1].seq) if more and records else None)

    def get_message(self, user_id: str, conversation_id: str, message_id: str) -> MessageRecord:
        key = {"pk": str_attr(f"U#{user_id}#C#{conversation_id}"), "sk": str_attr(f"MID#{message_id}")}
        pointer = self.client.get_item(TableName=self.agent_table, Key=key, ConsistentRead=True).get("Item")
        if pointer is None:
            raise NotFound(f"message {message_id} not found")
        seq = int(pointer["seq"]["N"])
        return self._found(lambda u: u.message(user_id, conversation_id, seq), f"message {message_id} not found")

    def delete_conversation(self, user_id: str, conversation_id: str) -> None:
        pk = f"U#{user_id}#C#{conversation_id}"
        item = self.client.get_item(
            TableName=self.agent_table, Key={"pk": str_attr(pk), "sk": str_attr("META")}, ConsistentRead=True
        ).get("Item")
        if item is None:
            raise NotFound(f"conversation {conversation_id} not found")
        conversation: ConversationRecord = self.decode(item)
        if conversation.active_run_id is not None:
            raise Conflict(f"conversation {conversation_id} has an active run; abort it first")
        try:
            # Only the revision checked above may be deleted: a turn that started since is kept.
            self.client.delete_item(
                TableName=self.agent_table,
                Key={"pk": str_attr(pk), "sk": str_attr("META")},
                ConditionExpression="#rev = :rev",
                ExpressionAttributeNames={"#rev": "rev"},
                ExpressionAttributeValues={":rev": item["rev"]},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            raise Conflict(f"conversation {conversation_id} changed while it was being deleted") from None
        for rest in self.query_all(self.agent_table, pk, ""):
            self.client.delete_item(TableName=self.agent_table, Key={"pk": rest["pk"], "sk": rest["sk"]})

    # -- approvals -------------------------------------------------------------------------------------

    def pending_approvals(self, user_id: str) -> list[ApprovalRecord]:
        items = self._index("GSI1", "gsi1pk", f"U#{user_id}#PENDING").get("Items", [])
        return [a for a in self._records(items) if a.status == "requested"]

    # -- events ----------------------------------------------------------------------------------------

    def finish_run(self, user_id: str, run_id: str, finish: FinishRun) -> RunRecord:
        """The run's end, its event in the same transaction as the terminal state.

        One without an event of its own ends the log with an empty one (`end`): the end always
        takes the log's next seq (see `append_events`).
        """
        if finish.event is None:
            finish = dataclasses.replace(finish, event=NewEvent(type="end", chunks=[]))
        return super().finish_run(user_id, run_id, finish)

    def append_events(self, user_id: str, run_id: str, events: Sequence[NewEvent], *, now: int) -> list[EventRecord]:
        """Each event one conditional `PutItem` at the next seq, the run item untouched.

        The seq is the item's key, so `attribute_not_exists` lets one writer have it: a second
        writer of the same seq fails, reads the run and the log's tail again, and appends after it
        (no gap, no duplicate). The next seq is the last this store appended when it knows it (no
        read at all), else read: the run (`TerminalState` once it has ended) and the log's tail.
        The log stays closed after the end: the end's own event, written in the same transaction
        as the terminal state, takes the next seq, so a writer that did not see the end collides
        with it and then reads the run.
        """
        key = (user_id, run_id)
        stored: list[EventRecord] = []
        for attempt in range(MAX_ATTEMPTS):
            last = self._tails.pop(key, None)
            if last is None or not events:
                last = live_run(DynamoUnit(self), user_id, run_id).last_event_seq
            pending = event_records(user_id, run_id, last, events[len(stored) :], now, self.delta_retention_ms)
            unit = DynamoUnit(self)
            staging = RedactingUnit(unit, self._redactor, self._reasoning)
            for record in pending:
                staging.put(record, new=True)
            written = unit.put_each()
            stored += pending[:written]
            if written == len(pending):
                if stored:
                    if len(self._tails) >= TAILS:
                        self._tails.clear()
                    self._tails[key] = stored[-1].seq
                return stored
            self._sleep(random.uniform(0, min(0.05, 0.002 * 2**attempt)))
        raise ConcurrentUpdate(f"gave up after {MAX_ATTEMPTS} attempts under contention")

    def events_after(
        self, user_id: str, run_id: str, after_seq: int, *, limit: int | None = None, now: int
    ) -> list[EventRecord]:
        kwargs: dict[str, Any] = {
            "TableName": self.events_table,
            "KeyConditionExpression": "pk = :pk AND seq > :after",
            "ExpressionAttributeValues": {":pk": str_attr(f"U#{user_id}#R#{run_id}"), ":after": num_attr(after_seq)},
            "ConsistentRead": True,
        }
        out: list[EventRecord] = []
        found = False
        while limit is None or len(out) < limit:
            page = self.client.query(**kwargs)
            found = found or bool(page.get("Items"))
            for item in page.get("Items", []):
                event: EventRecord = self.decode(item)
                if event.expires_at is None or event.expires_at > now:  # TTL deletion lags: filter on read
                    out.append(event)
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        if not found:
            # The key is the user's, so an event found proves the run is theirs; without one, the run
            # is read to tell "nothing new" from NotFound (a stream's poll finds events: no extra read).
            self.get_run(user_id, run_id)
        return out[:limit]

    # -- artifacts ---------------------------------------------------------------------------------------

    def list_message_artifacts(self, user_id: str, message_id: str) -> list[ArtifactRecord]:
        items = self._index("GSI1", "gsi1pk", f"U#{user_id}#MSG#{message_id}#ARTS").get("Items", [])
        return self._records(items)

    # -- system sweeps -----------------------------------------------------------------------------------

    def stale_runs(self, *, heartbeat_before: int, limit: int = 100) -> list[tuple[str, str]]:
        # One query per shard, each already in heartbeat order; the oldest `limit` of them all.
        items: list[dict[str, Any]] = []
        for key in ACTIVE_RUN_KEYS:
            items += self._index("GSI2", "gsi2pk", key, upper=f"{heartbeat_before:013d}", limit=limit).get("Items", [])
        items.sort(key=lambda item: item["gsi2sk"]["S"])
        return [(r.user_id, r.run_id) for r in self._records(items[:limit]) if r.status not in TERMINAL["run"]]

    def expiring_approvals(self, *, before: int, limit: int = 100) -> list[tuple[str, str]]:
        items = self._index("GSI2", "gsi2pk", "APPROVALS#requested", upper=f"{before:013d}", limit=limit).get(
            "Items", []
        )
        return [(a.user_id, a.approval_id) for a in self._records(items) if a.status == "requested"]
