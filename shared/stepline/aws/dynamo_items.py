"""The DynamoDB item layout of the store's records: keys, index attributes and kinds.

One place says where each record lives (`pk`/`sk`, or `pk`/`seq` on the events table) and which
sparse GSI attributes it carries while it belongs in an index (docs/data-model.md). The `kind`
names an item's record class so it can be decoded. An item's `data` leaves out the fields that
are None by default and None (`record_fields`): write units are counted per started KB, and the
run, step and tool-call items are written at every step. For the same reason a record's JSON from
`COMPRESS_FROM` bytes is stored zlib-compressed, as the binary `dataz` instead (`data_attribute`).
"""

from __future__ import annotations

import contextlib
import zlib
from typing import Any

from ..store.records import (
    TERMINAL,
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

__all__ = [
    "ACTIVE_RUN_KEYS",
    "ACTIVE_RUN_SHARDS",
    "KINDS",
    "KIND_OF",
    "COMPRESS_FROM",
    "active_run_key",
    "data_attribute",
    "data_of",
    "index_attributes",
    "keys",
    "move_forward",
    "num_attr",
    "record_fields",
    "str_attr",
]

_NEVER = 9_999_999_999_999

ACTIVE_RUN_SHARDS = 16
"""How many GSI2 partition keys the working runs are spread over. Every step end moves a run's
heartbeat (GSI2's sort key), so one key for all runs would be one hot partition (about 4,900 write
units a second at 10,000 working runs against a partition's 1,000); sixteen keep each under a
third of it at that load. The reconciler's sweep queries them all (docs/scale.md)."""
_LEGACY_ACTIVE_RUN_KEY = "RUNS#active"
ACTIVE_RUN_KEYS = (*(f"RUNS#active#{n:02d}" for n in range(ACTIVE_RUN_SHARDS)), _LEGACY_ACTIVE_RUN_KEY)
"""Every key the sweep reads: the shards, and the one key of before the sharding (runs written by
an older version keep it until their next write)."""


def active_run_key(run_id: str) -> str:
    """The GSI2 partition key of a working run: a shard chosen by a stable hash of its id."""
    return ACTIVE_RUN_KEYS[zlib.crc32(run_id.encode()) % ACTIVE_RUN_SHARDS]


def str_attr(value: str) -> dict[str, str]:
    """A string attribute value."""
    return {"S": value}


COMPRESS_FROM = 800
"""Bytes of a record's JSON from which the item stores it compressed. Under it an item is at most
a write unit with its keys, and stays readable in the console; over it the JSON's repeated field
names and text compress to about half (a 10-step headless run's run, step, message, tool-call and
approval items, English prose in its text: 375 write units as JSON, 205 compressed; bench/cost.py)."""


def data_attribute(raw: bytes) -> dict[str, Any]:
    """The item attribute holding a record's JSON (UTF-8): `data` (a string), or `dataz` (zlib, binary)."""
    if len(raw) >= COMPRESS_FROM and len(packed := zlib.compress(raw)) < len(raw):
        return {"dataz": {"B": packed}}
    return {"data": str_attr(raw.decode())}


def data_of(item: dict[str, Any]) -> str:
    """A record's JSON from its item, either way it is stored (items of before `dataz` have `data`)."""
    if "dataz" in item:
        return zlib.decompress(item["dataz"]["B"]).decode()
    return str(item["data"]["S"])


def record_fields(record: Record) -> dict[str, Any]:
    """The record's JSON fields, but those None that are None by default (a read gives them back).

    So a field's default of None must stay None: an item written without it reads it as the default.
    """
    fields = type(record).model_fields
    return {k: v for k, v in record.model_dump(mode="json").items() if v is not None or fields[k].default is not None}


def num_attr(value: int) -> dict[str, str]:
    """A number attribute value."""
    return {"N": str(value)}


def keys(record: Record) -> dict[str, dict[str, str]]:
    """The primary key of a record's item."""
    match record:
        case ConversationRecord():
            return {"pk": str_attr(f"U#{record.user_id}#C#{record.conversation_id}"), "sk": str_attr("META")}
        case MessageRecord():
            return {
                "pk": str_attr(f"U#{record.user_id}#C#{record.conversation_id}"),
                "sk": str_attr(f"M#{record.seq:010d}"),
            }
        case RunRecord():
            return {"pk": str_attr(f"U#{record.user_id}#R#{record.run_id}"), "sk": str_attr("META")}
        case StepRecordRow():
            return {
                "pk": str_attr(f"U#{record.user_id}#R#{record.run_id}"),
                "sk": str_attr(f"S#{record.step_index:06d}"),
            }
        case ToolCallRecord():
            return {"pk": str_attr(f"U#{record.user_id}#R#{record.run_id}"), "sk": str_attr(f"T#{record.tool_call_id}")}
        case ApprovalRecord():
            return {"pk": str_attr(f"U#{record.user_id}#A#{record.approval_id}"), "sk": str_attr("META")}
        case CheckpointRecord():
            return {"pk": str_attr(f"U#{record.user_id}#R#{record.run_id}"), "sk": str_attr(f"K#{record.seq:06d}")}
        case EventRecord():
            return {"pk": str_attr(f"U#{record.user_id}#R#{record.run_id}"), "seq": num_attr(record.seq)}
        case ArtifactRecord():
            return {"pk": str_attr(f"U#{record.user_id}#ART#{record.artifact_id}"), "sk": str_attr("META")}


def index_attributes(record: Record) -> dict[str, dict[str, str]]:
    """GSI attributes (sparse: present only while the record belongs in the index)."""
    match record:
        case ConversationRecord():
            return {
                "gsi1pk": str_attr(f"U#{record.user_id}#CONVS"),
                "gsi1sk": str_attr(f"{record.updated_at:013d}#{record.conversation_id}"),
            }
        case RunRecord() if record.status not in TERMINAL["run"]:
            return {
                "gsi2pk": str_attr(active_run_key(record.run_id)),
                "gsi2sk": str_attr(f"{record.heartbeat_at or 0:013d}#{record.user_id}#{record.run_id}"),
            }
        case ApprovalRecord() if record.status == "requested":
            expires = record.expires_at if record.expires_at is not None else _NEVER
            attributes = {
                "gsi1pk": str_attr(f"U#{record.user_id}#PENDING"),
                "gsi1sk": str_attr(f"{expires:013d}#{record.approval_id}"),
            }
            if record.expires_at is not None:
                attributes |= {
                    "gsi2pk": str_attr("APPROVALS#requested"),
                    "gsi2sk": str_attr(f"{expires:013d}#{record.user_id}#{record.approval_id}"),
                }
            return attributes
        case ArtifactRecord():
            return {
                "gsi1pk": str_attr(f"U#{record.user_id}#MSG#{record.message_id}#ARTS"),
                "gsi1sk": str_attr(f"{record.created_at:013d}#{record.artifact_id}"),
            }
        case _:
            return {}


KINDS: dict[str, type[Any]] = {
    "conversation": ConversationRecord,
    "message": MessageRecord,
    "run": RunRecord,
    "step": StepRecordRow,
    "tool_call": ToolCallRecord,
    "approval": ApprovalRecord,
    "checkpoint": CheckpointRecord,
    "event": EventRecord,
    "artifact": ArtifactRecord,
}
KIND_OF = {cls: kind for kind, cls in KINDS.items()}


def move_forward(client: Any, table: str, key: dict[str, Any], name: str, value: int, **also: dict[str, Any]) -> None:
    """Set the number `name` of the item at `key` to `value` (and the attributes `also`), only forward.

    One conditional `UpdateItem`: it writes when the item has no `name` yet or a smaller one. A
    refused condition means a later value is there already (another writer's, or a clock that
    lags), so nothing is to be done.
    """
    values = {name: num_attr(value), **also}
    names = {f"#a{i}": attribute for i, attribute in enumerate(values)}
    with contextlib.suppress(client.exceptions.ConditionalCheckFailedException):
        client.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="SET " + ", ".join(f"{n} = :v{i}" for i, n in enumerate(names)),
            ConditionExpression="attribute_not_exists(#a0) OR #a0 < :v0",
            ExpressionAttributeNames=names,  # names, not words: `until` and `kind` are reserved
            ExpressionAttributeValues={f":v{i}": v for i, v in enumerate(values.values())},
        )
