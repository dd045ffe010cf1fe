"""Billable DynamoDB request units, counted from the calls a client makes, by AWS's published rules.

`DynamoMeter` wraps a boto3 DynamoDB client (moto's, in the benchmarks): every call goes through
unchanged and is metered from its parameters and response, with a shadow of each item's size so a
write knows the item it replaces. The rules (docs.aws.amazon.com/amazondynamodb/latest/developerguide/
CapacityUnitCalculations.html, …/transaction-apis.html, …/GSI.html#GSI.ThroughputConsiderations):

- item size: the UTF-8 bytes of every attribute name plus its value; a string its UTF-8 bytes, a
  number about `ceil(significant digits / 2) + 1` bytes, binary its bytes, a boolean or null 1 byte,
  a list or map 3 bytes plus its elements plus 1 byte per element (a map's keys count as names);
- a write: 1 write request unit per started KB of the larger of the item before and after (a delete:
  the item deleted; at least 1); a failed conditional write still costs its units;
- a transactional write: 2 units per started KB of each item (prepare and commit);
- a read: 1 read request unit per started 4 KB for a strongly consistent read, half that for an
  eventually consistent one; a query sums the sizes of the items it returns before rounding, and a
  read of a missing item still costs the minimum;
- every write to a table also writes each global secondary index the item is in before or after:
  1 unit per started KB of the projected item (2 writes when the item moves between index keys).

Nothing here imports moto or Stepline: it is plain arithmetic on the wire format, unit-tested on
closed-form cases (tests/unit/test_cost_meter.py).
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DynamoMeter", "Index", "Usage", "item_size", "metering", "read_units", "write_units"]

KB = 1024
_sending = threading.local()


def metering() -> bool:
    """Whether the calling thread's DynamoDB request is one a `DynamoMeter` sends (and so meters).

    A hook on every client's API call (`bench/cost_run.Observed.api_hook`) counts the requests for
    which this is false: a component holding the client unwrapped, or a paginator, would otherwise
    go unbilled without a sign."""
    return getattr(_sending, "on", False)


READ_BLOCK = 4 * KB


def _number_size(text: str) -> int:
    digits = text.lstrip("+-").replace(".", "").split("e")[0].split("E")[0].strip("0")
    return math.ceil(max(len(digits), 1) / 2) + 1


def value_size(value: dict[str, Any]) -> int:
    """The size of one attribute value in the wire format (`{"S": "x"}`, `{"N": "1"}`, `{"M": {...}}`)."""
    ((kind, inner),) = value.items()
    match kind:
        case "S":
            return len(str(inner).encode())
        case "N":
            return _number_size(str(inner))
        case "B":
            return len(inner if isinstance(inner, bytes) else str(inner).encode())
        case "BOOL" | "NULL":
            return 1
        case "SS":
            return sum(len(str(s).encode()) for s in inner)
        case "NS":
            return sum(_number_size(str(n)) for n in inner)
        case "BS":
            return sum(len(b) for b in inner)
        case "L":
            return 3 + sum(value_size(v) + 1 for v in inner)
        case "M":
            return 3 + sum(len(str(k).encode()) + value_size(v) + 1 for k, v in inner.items())
        case _:
            raise ValueError(f"not an attribute value type: {kind}")


def item_size(item: dict[str, dict[str, Any]]) -> int:
    """An item's size by DynamoDB's rule: names plus values, keys included."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def write_units(size: int, *, transactional: bool = False) -> int:
    units = max(1, math.ceil(size / KB))
    return 2 * units if transactional else units


def read_units(size: int, *, consistent: bool) -> float:
    units = max(1, math.ceil(size / READ_BLOCK))
    return float(units) if consistent else units / 2


@dataclass(frozen=True)
class Index:
    """A global secondary index: its key attributes and projection (`ALL` or `KEYS_ONLY`)."""

    name: str
    keys: tuple[str, ...]
    projection: str


@dataclass
class Usage:
    """What the metered calls cost, by meter."""

    write_units: int = 0
    read_units: float = 0.0
    index_write_units: int = 0
    requests: Counter[str] = field(default_factory=Counter[str])
    """Calls by operation name."""
    write_units_by: Counter[str] = field(default_factory=Counter[str])
    """Table write units by what was written: the item's `kind`, or its table."""

    def scaled(self, factor: float) -> Usage:
        """These units `factor` times (a sampled interval stretched to its real length)."""
        return Usage(
            write_units=round(self.write_units * factor),
            read_units=self.read_units * factor,
            index_write_units=round(self.index_write_units * factor),
            requests=Counter({k: round(v * factor) for k, v in self.requests.items()}),
            write_units_by=Counter({k: round(v * factor) for k, v in self.write_units_by.items()}),
        )

    def add(self, other: Usage) -> None:
        self.write_units += other.write_units
        self.read_units += other.read_units
        self.index_write_units += other.index_write_units
        self.requests.update(other.requests)
        self.write_units_by.update(other.write_units_by)


_Key = tuple[str, tuple[tuple[str, str], ...]]


_KEYED_KINDS = {"#USAGE": "usage counter", "#SLOTS": "run slots"}
"""Items without a `kind` attribute, named by how their partition key ends."""


def _kind(item: dict[str, Any]) -> str:
    """What an item is, for the write units by item: its `kind`, else by its key, else an id pointer."""
    if "kind" in item:
        return str(item["kind"]["S"])
    pk = str(item.get("pk", {}).get("S", ""))
    return next((name for end, name in _KEYED_KINDS.items() if pk.endswith(end)), "id pointer")


class DynamoMeter:
    """A DynamoDB client that meters every call (thread-safe); `usage` holds the totals so far.

    `keys` names each table's key attributes, `indexes` its global secondary indexes. Items written
    before the meter was installed are unknown to its shadow: install it on empty tables.
    """

    def __init__(self, client: Any, *, keys: dict[str, tuple[str, ...]], indexes: dict[str, list[Index]]) -> None:
        self._client = client
        self._keys = keys
        self._indexes = indexes
        self._items: dict[_Key, dict[str, dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self.usage = Usage()
        self.unmetered: set[int] = set()
        """Threads whose reads are not counted (a benchmark's own observations)."""

    @property
    def exceptions(self) -> Any:
        return self._client.exceptions

    @property
    def meta(self) -> Any:
        return self._client.meta

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def reset(self) -> Usage:
        """The usage so far; the meter starts again from zero (the items' shadow is kept)."""
        with self._lock:
            usage, self.usage = self.usage, Usage()
        return usage

    # -- the shadow --------------------------------------------------------------------------------

    def _key(self, table: str, item: dict[str, Any]) -> _Key:
        return table, tuple((name, str(item[name])) for name in self._keys[table])

    def _index_writes(self, table: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> int:
        units = 0
        for index in self._indexes.get(table, []):

            def projected(item: dict[str, Any] | None, index: Index = index) -> dict[str, Any] | None:
                if item is None or not all(k in item for k in index.keys):
                    return None
                if index.projection == "ALL":
                    return item
                names = {*self._keys[table], *index.keys}
                return {k: v for k, v in item.items() if k in names}

            old, new = projected(before), projected(after)
            if old is not None and new is not None:
                moved = any(old[k] != new[k] for k in index.keys)
                if moved:
                    units += write_units(item_size(old)) + write_units(item_size(new))
                elif old != new:
                    units += write_units(max(item_size(old), item_size(new)))
            elif old is not None or new is not None:
                units += write_units(item_size(old or new or {}))
        return units

    def _write(self, table: str, key_item: dict[str, Any], after: dict[str, Any] | None, *, transactional: bool) -> int:
        key = self._key(table, key_item)
        before = self._items.get(key)
        sizes = [item_size(i) for i in (before, after) if i is not None]
        units = write_units(max(sizes, default=0), transactional=transactional)
        kind = _kind(after or before or {})
        self.usage.write_units += units
        self.usage.write_units_by[kind] += units
        self.usage.index_write_units += self._index_writes(table, before, after)
        if after is None:
            self._items.pop(key, None)
        else:
            self._items[key] = after
        return units

    def _failed_write(self, table: str, key_item: dict[str, Any], *, transactional: bool) -> None:
        before = self._items.get(self._key(table, key_item))
        units = write_units(item_size(before) if before else 0, transactional=transactional)
        self.usage.write_units += units
        self.usage.write_units_by["failed condition"] += units

    # -- metered calls -----------------------------------------------------------------------------

    def _send(self, operation: str, **kwargs: Any) -> Any:
        """The client's `operation`, marked for the hook as metered (see `metering`)."""
        _sending.on = True
        try:
            return getattr(self._client, operation)(**kwargs)
        finally:
            _sending.on = False

    def get_item(self, **kwargs: Any) -> Any:
        response = self._send("get_item", **kwargs)
        if threading.get_ident() in self.unmetered:
            return response
        with self._lock:
            self.usage.requests["GetItem"] += 1
            item = response.get("Item")
            size = item_size(item) if item else 0
            self.usage.read_units += read_units(size, consistent=bool(kwargs.get("ConsistentRead")))
        return response

    def query(self, **kwargs: Any) -> Any:
        response = self._send("query", **kwargs)
        if threading.get_ident() in self.unmetered:
            return response
        with self._lock:
            self.usage.requests["Query"] += 1
            size = sum(item_size(i) for i in response.get("Items", []))
            self.usage.read_units += read_units(size, consistent=bool(kwargs.get("ConsistentRead")))
        return response

    def put_item(self, **kwargs: Any) -> Any:
        with self._lock:
            self.usage.requests["PutItem"] += 1
            try:
                response = self._send("put_item", **kwargs)
            except self._client.exceptions.ConditionalCheckFailedException:
                self._failed_write(kwargs["TableName"], kwargs["Item"], transactional=False)
                raise
            self._write(kwargs["TableName"], kwargs["Item"], kwargs["Item"], transactional=False)
        return response

    def delete_item(self, **kwargs: Any) -> Any:
        with self._lock:
            self.usage.requests["DeleteItem"] += 1
            try:
                response = self._send("delete_item", **kwargs)
            except self._client.exceptions.ConditionalCheckFailedException:
                self._failed_write(kwargs["TableName"], kwargs["Key"], transactional=False)
                raise
            self._write(kwargs["TableName"], kwargs["Key"], None, transactional=False)
        return response

    def update_item(self, **kwargs: Any) -> Any:
        with self._lock:
            self.usage.requests["UpdateItem"] += 1
            table, key = kwargs["TableName"], kwargs["Key"]
            try:
                response = self._send("update_item", **kwargs)
            except self._client.exceptions.ConditionalCheckFailedException:
                self._failed_write(table, key, transactional=False)
                raise
            after = self._send("get_item", TableName=table, Key=key, ConsistentRead=True).get("Item")  # not billed
            self._write(table, key, after, transactional=False)
        return response

    def transact_write_items(self, **kwargs: Any) -> Any:
        actions: list[dict[str, Any]] = kwargs["TransactItems"]
        with self._lock:
            self.usage.requests["TransactWriteItems"] += 1
            try:
                response = self._send("transact_write_items", **kwargs)
            except self._client.exceptions.TransactionCanceledException:
                for action in actions:
                    ((_, body),) = action.items()
                    self._failed_write(body["TableName"], body.get("Item", body.get("Key", {})), transactional=True)
                raise
            for action in actions:
                ((verb, body),) = action.items()
                if verb == "Put":
                    self._write(body["TableName"], body["Item"], body["Item"], transactional=True)
                elif verb == "Delete":
                    self._write(body["TableName"], body["Key"], None, transactional=True)
                elif verb == "ConditionCheck":
                    self.usage.read_units += 2 * read_units(0, consistent=True)
                else:
                    raise NotImplementedError(f"the meter does not price a transactional {verb}")
        return response
