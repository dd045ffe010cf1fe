"""`DynamoUnit`: the store's unit of work on DynamoDB.

It reads with strongly consistent reads and remembers each item's `rev`; its commit turns the
staged writes (plus the id pointers a new message or approval needs) into one
`TransactWriteItems`, each write conditioned on the revision it read. A unit that writes a
single item commits it as a conditional `PutItem` instead: as atomic as a one-item transaction,
at half its write units (a tool call's claim, start and outcome, an approval's decision).
"""

from __future__ import annotations

from typing import Any, Protocol

from ..store.errors import ConcurrentUpdate, StoreError
from ..store.message_pages import StoredPage
from ..store.records import (
    ApprovalRecord,
    ArtifactRecord,
    CheckpointRecord,
    ConversationRecord,
    EventRecord,
    MessageRecord,
    RunRecord,
    StepRecordRow,
    ToolCallRecord,
)
from ..store.unit import Record
from .dynamo_items import index_attributes, keys, num_attr, str_attr

__all__ = ["DynamoTables", "DynamoUnit", "commit_puts"]


def commit_puts(client: Any, actions: list[dict[str, Any]]) -> None:
    """Commit conditional puts at once; `ConcurrentUpdate` when a condition or a conflict refused one.

    One put is a conditional `PutItem`: as atomic as a one-item transaction, at half its write
    units. Several are one `TransactWriteItems`.
    """
    try:
        if len(actions) == 1:
            client.put_item(**actions[0]["Put"])
        else:
            client.transact_write_items(TransactItems=actions)
    except (client.exceptions.ConditionalCheckFailedException, client.exceptions.TransactionConflictException):
        raise ConcurrentUpdate("another writer changed the item first") from None
    except client.exceptions.TransactionCanceledException as error:
        reasons = [r.get("Code") for r in error.response.get("CancellationReasons", [])]
        if "ConditionalCheckFailed" in reasons or "TransactionConflict" in reasons:
            raise ConcurrentUpdate("another writer changed an item first") from None
        raise StoreError(f"transaction cancelled: {reasons}") from error


class DynamoTables(Protocol):
    """What a unit needs of its store (`DynamoStore`): the tables, their client, the item codec."""

    client: Any
    agent_table: str
    events_table: str

    def encode(self, record: Record, read_pages: list[StoredPage] | None = None) -> dict[str, Any]:
        """The item's payload attributes; a message keeps the `read_pages` it begins with."""
        ...

    def decode(self, item: dict[str, Any], read_pages: list[StoredPage] | None = None) -> Any:
        """The record of an item (a paged message's pages added to `read_pages`)."""
        ...

    def query_all(self, table: str, pk: str, prefix: str, *, start: str | None = None) -> list[dict[str, Any]]:
        """Every item of a partition whose sort key starts with `prefix` (and is at least `start`)."""
        ...


class DynamoUnit:
    """Consistent reads; writes staged with the revision each read saw."""

    def __init__(self, store: DynamoTables) -> None:
        self._store = store
        self._revs: dict[tuple[str, str, str], int] = {}
        self._pages: dict[tuple[str, str, str], list[StoredPage]] = {}
        """The pages of each message read (what a write of it need not PUT again)."""
        self.writes: list[tuple[Record, bool]] = []
        self.extra: list[dict[str, Any]] = []

    # -- reads -----------------------------------------------------------------------------------

    def remember(self, table: str, item: dict[str, Any]) -> Any:
        """Decode an item and note the revision a later write must still find."""
        sort = item.get("sk", item.get("seq"))
        assert sort is not None
        key = (table, item["pk"]["S"], next(iter(sort.values())))
        self._revs[key] = int(item["rev"]["N"])
        pages: list[StoredPage] = []
        record = self._store.decode(item, pages)
        self._pages[key] = pages
        return record

    def get_item(self, record_keys: dict[str, dict[str, str]], table: str | None = None) -> Any:
        table = table or self._store.agent_table
        item = self._store.client.get_item(TableName=table, Key=record_keys, ConsistentRead=True).get("Item")
        return None if item is None else self.remember(table, item)

    def _query(self, pk: str, prefix: str, start: str | None = None) -> list[Any]:
        table = self._store.agent_table
        return [self.remember(table, item) for item in self._store.query_all(table, pk, prefix, start=start)]

    def conversation(self, user_id: str, conversation_id: str) -> ConversationRecord | None:
        return self.get_item({"pk": str_attr(f"U#{user_id}#C#{conversation_id}"), "sk": str_attr("META")})

    def message(self, user_id: str, conversation_id: str, seq: int) -> MessageRecord | None:
        return self.get_item({"pk": str_attr(f"U#{user_id}#C#{conversation_id}"), "sk": str_attr(f"M#{seq:010d}")})

    def message_id_taken(self, user_id: str, conversation_id: str, message_id: str) -> bool:
        key = {"pk": str_attr(f"U#{user_id}#C#{conversation_id}"), "sk": str_attr(f"MID#{message_id}")}
        return "Item" in self._store.client.get_item(TableName=self._store.agent_table, Key=key, ConsistentRead=True)

    def run(self, user_id: str, run_id: str) -> RunRecord | None:
        """The run, its `last_event_seq` the log's: appends leave the run item as it is."""
        run: RunRecord | None = self.get_item({"pk": str_attr(f"U#{user_id}#R#{run_id}"), "sk": str_attr("META")})
        if run is None:
            return None
        last = self.last_event_seq(user_id, run_id)
        return run if last <= run.last_event_seq else run.model_copy(update={"last_event_seq": last})

    def last_event_seq(self, user_id: str, run_id: str) -> int:
        """The seq of the run's last event, 0 before the first (one consistent read of the log's tail)."""
        page = self._store.client.query(
            TableName=self._store.events_table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": str_attr(f"U#{user_id}#R#{run_id}")},
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        )
        items = page.get("Items", [])
        return int(items[0]["seq"]["N"]) if items else 0

    def step(self, user_id: str, run_id: str, step_index: int) -> StepRecordRow | None:
        return self.get_item({"pk": str_attr(f"U#{user_id}#R#{run_id}"), "sk": str_attr(f"S#{step_index:06d}")})

    def tool_call(self, user_id: str, run_id: str, tool_call_id: str) -> ToolCallRecord | None:
        return self.get_item({"pk": str_attr(f"U#{user_id}#R#{run_id}"), "sk": str_attr(f"T#{tool_call_id}")})

    def run_tool_calls(self, user_id: str, run_id: str) -> list[ToolCallRecord]:
        return self._query(f"U#{user_id}#R#{run_id}", "T#")

    def run_steps(self, user_id: str, run_id: str, from_step: int = 0) -> list[StepRecordRow]:
        return self._query(f"U#{user_id}#R#{run_id}", "S#", f"S#{from_step:06d}" if from_step else None)

    def approval(self, user_id: str, approval_id: str) -> ApprovalRecord | None:
        return self.get_item({"pk": str_attr(f"U#{user_id}#A#{approval_id}"), "sk": str_attr("META")})

    def run_approvals(self, user_id: str, run_id: str) -> list[ApprovalRecord]:
        pointers = self._store.query_all(self._store.agent_table, f"U#{user_id}#R#{run_id}", "AP#")
        found = [self.approval(user_id, p["approval_id"]["S"]) for p in pointers]
        return [a for a in found if a is not None]

    def approval_for_tool_call(self, user_id: str, run_id: str, tool_call_id: str) -> str | None:
        key = {"pk": str_attr(f"U#{user_id}#R#{run_id}"), "sk": str_attr(f"AP#{tool_call_id}")}
        item = self._store.client.get_item(TableName=self._store.agent_table, Key=key, ConsistentRead=True).get("Item")
        return None if item is None else item["approval_id"]["S"]

    def artifact(self, user_id: str, artifact_id: str) -> ArtifactRecord | None:
        return self.get_item({"pk": str_attr(f"U#{user_id}#ART#{artifact_id}"), "sk": str_attr("META")})

    def checkpoint(self, user_id: str, run_id: str, seq: int) -> CheckpointRecord | None:
        return self.get_item({"pk": str_attr(f"U#{user_id}#R#{run_id}"), "sk": str_attr(f"K#{seq:06d}")})

    # -- writes ------------------------------------------------------------------------------------

    def put(self, record: Record, *, new: bool = False) -> None:
        self.writes.append((record, new))

    def delete(self, record: Record) -> None:
        raise NotImplementedError("operations do not delete inside a unit")

    def _action(self, record: Record, new: bool) -> dict[str, Any]:
        store = self._store
        is_event = isinstance(record, EventRecord)
        table = store.events_table if is_event else store.agent_table
        record_keys = keys(record)
        sort = record_keys.get("sk", record_keys.get("seq"))
        assert sort is not None
        rev_key = (table, record_keys["pk"]["S"], next(iter(sort.values())))
        previous = self._revs.get(rev_key)
        if not new and previous is None:
            raise StoreError(f"internal: {type(record).__name__} written without being read")
        item = {
            **record_keys,
            **index_attributes(record),
            **store.encode(record, self._pages.get(rev_key)),
            "rev": num_attr((previous or 0) + 1),
        }
        if isinstance(record, EventRecord) and record.expires_at is not None:
            item["expires_at"] = num_attr(record.expires_at // 1000)  # TTL reads epoch seconds
        if new:
            return {"Put": {"TableName": table, "Item": item, "ConditionExpression": "attribute_not_exists(pk)"}}
        return {
            "Put": {
                "TableName": table,
                "Item": item,
                "ConditionExpression": "#rev = :rev",
                "ExpressionAttributeNames": {"#rev": "rev"},
                "ExpressionAttributeValues": {":rev": num_attr(previous or 0)},
            }
        }

    def _pointers(self, record: Record) -> list[dict[str, Any]]:
        table = self._store.agent_table
        if isinstance(record, MessageRecord):
            item = {
                "pk": str_attr(f"U#{record.user_id}#C#{record.conversation_id}"),
                "sk": str_attr(f"MID#{record.message_id}"),
                "seq": num_attr(record.seq),
            }
        elif isinstance(record, ApprovalRecord):
            item = {
                "pk": str_attr(f"U#{record.user_id}#R#{record.run_id}"),
                "sk": str_attr(f"AP#{record.tool_call_id}"),
                "approval_id": str_attr(record.approval_id),
            }
        else:
            return []
        return [{"Put": {"TableName": table, "Item": item, "ConditionExpression": "attribute_not_exists(pk)"}}]

    def put_each(self) -> int:
        """Write the staged new items one by one, in order, each a conditional `PutItem`.

        No transaction: returns how many were written before one that already existed.
        """
        client = self._store.client
        for index, (record, new) in enumerate(self.writes):
            if not new or self._pointers(record):
                raise StoreError(f"internal: a {type(record).__name__} is not written on its own")
            try:
                client.put_item(**self._action(record, new)["Put"])
            except client.exceptions.ConditionalCheckFailedException:
                return index
        return len(self.writes)

    def commit(self) -> None:
        actions: list[dict[str, Any]] = []
        for record, new in self.writes:
            actions.append(self._action(record, new))
            if new:
                actions.extend(self._pointers(record))
        if not actions:
            return
        if len(actions) > 100:
            raise StoreError(f"one operation would write {len(actions)} items; DynamoDB transactions take 100")
        commit_puts(self._store.client, actions)
