"""Large JSON values go to the blob store; items keep a pointer and stay under DynamoDB's 400 KB.

A stored value is an envelope, one of

    {"inline": <the value>}                                  small values, kept in the item
    {"blob": {"key": …, "sha256": …, "size": …, "mediaType": "application/json"}}

The rule for writers: **blob first, then the transaction that points to it.** `Offloader.dump`
writes the blob before it returns the pointer, so by the time a transaction can commit the
pointer, the bytes are already stored. If the transaction then fails, the blob is an orphan,
which is harmless (content-addressed: the retry writes the same key); a pointer to bytes that
were never written (a dangling pointer) cannot happen. `load` re-hashes what it reads.

`item_size` estimates an item the way DynamoDB counts it, and `shrink_to_fit` moves the largest
envelopes of an item to blobs until it fits under a limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from decimal import Decimal
from typing import Any, Final, cast

from pydantic import JsonValue

from ..protocol._json import dumps, loads_strict
from .blobs import BlobRef, BlobStore
from .errors import NotFound, StoreError
from .records import check_id

__all__ = ["DEFAULT_THRESHOLD", "ITEM_LIMIT", "ItemTooLarge", "Offloader", "item_size", "shrink_to_fit"]

DEFAULT_THRESHOLD: Final = 64 * 1024
"""Values whose compact JSON is larger than this many bytes are offloaded."""

ITEM_LIMIT: Final = 400 * 1024
"""DynamoDB's hard limit on one item (attribute names plus values)."""

_MEDIA_TYPE: Final = "application/json"


class ItemTooLarge(StoreError):
    """The item is still over the limit after every candidate attribute was moved to a blob."""


class Offloader:
    """Wraps values in envelopes for one user: inline when small, a blob pointer when large.

    Example:
        ```python
        offloader = Offloader(blobs, user_id)
        item["output"] = offloader.dump(tool_output)  # writes the blob now, if needed
        ...  # then commit the transaction that holds `item`
        value = offloader.load(item["output"])
        ```
    """

    def __init__(self, blobs: BlobStore, user_id: str, threshold: int = DEFAULT_THRESHOLD) -> None:
        self.blobs = blobs
        self.user_id = check_id(user_id, "user id")
        self.threshold = threshold

    def dump(self, value: object) -> dict[str, Any]:
        """`{"inline": value}` if its compact JSON fits the threshold, else write the blob and point to it."""
        data = dumps(value).encode("utf-8")
        if len(data) <= self.threshold:
            return {"inline": value}
        return self._blob(data)

    def to_blob(self, value: object) -> dict[str, Any]:
        """Write `value` to a blob whatever its size, and return the pointer envelope."""
        return self._blob(dumps(value).encode("utf-8"))

    def load(self, stored: Mapping[str, Any]) -> JsonValue:
        """The value an envelope stands for (reading and verifying the blob if it is one)."""
        if set(stored) == {"inline"}:
            return cast(JsonValue, stored["inline"])
        if set(stored) != {"blob"}:
            raise ValueError('not a payload envelope: expected exactly one key, "inline" or "blob"')
        ref = BlobRef.model_validate(stored["blob"])
        # A pointer is server-written, but never follow one out of this user's scope.
        if not ref.key.startswith(f"users/{self.user_id}/"):
            raise NotFound(f"no blob {ref.key} for this user")
        return cast(JsonValue, loads_strict(self.blobs.get(ref)))

    def _blob(self, data: bytes) -> dict[str, Any]:
        ref = self.blobs.put(self.user_id, data, media_type=_MEDIA_TYPE)
        return {"blob": ref.to_wire()}


def _number_size(value: int | float | Decimal) -> int:
    # DynamoDB trims leading and trailing zeros and counts one byte per two significant digits, plus one.
    digits = "".join(str(d) for d in Decimal(str(value)).as_tuple().digits).strip("0") or "0"
    return (len(digits) + 1) // 2 + 1


def _value_size(value: object) -> int:
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, int | float | Decimal):
        return _number_size(value)
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, Mapping):
        entries = cast(Mapping[str, object], value)
        # A map or list costs 3 bytes, and each element 1 byte more than its own size.
        return 3 + sum(len(str(name).encode("utf-8")) + _value_size(item) + 1 for name, item in entries.items())
    if isinstance(value, list | tuple):
        elements = cast(Iterable[object], value)
        return 3 + sum(_value_size(item) + 1 for item in elements)
    if isinstance(value, Set):
        members = cast(Iterable[object], value)  # a string, number or binary set
        return sum(_value_size(item) for item in members)
    raise TypeError(f"cannot size a {type(value).__name__} as a DynamoDB attribute")


def item_size(item: Mapping[str, Any]) -> int:
    """Estimate a DynamoDB item's size in bytes, as DynamoDB's "item sizes and formats" page counts it.

    Attribute names and strings count their UTF-8 bytes, binary its raw bytes; a number about one
    byte per two significant digits plus one; null and booleans one byte; a map or list 3 bytes plus
    its elements, each element one byte more. `item` holds Python values as boto3's resource layer
    takes them (str, int/float/Decimal, bool, None, bytes, Mapping, list, set), not `{"S": …}` forms.
    """
    return sum(len(name.encode("utf-8")) + _value_size(value) for name, value in item.items())


def _is_inline(value: object) -> bool:
    return isinstance(value, Mapping) and set(cast(Mapping[str, object], value)) == {"inline"}


def shrink_to_fit(
    item: Mapping[str, Any],
    offloader: Offloader,
    *,
    limit: int = 350_000,
    candidates: Iterable[str],
) -> dict[str, Any]:
    """A copy of `item` whose largest candidate attributes were moved to blobs until it fits `limit` bytes.

    Each candidate attribute must hold an envelope (what `Offloader.dump` returns): an `inline` one
    becomes a `blob` one, so readers keep calling `Offloader.load` either way. The default limit
    leaves room under DynamoDB's 400 KB for attributes added at commit time. The blobs are written
    here, before the caller's transaction, like every offload.

    Raises:
        ValueError: a candidate attribute does not hold an envelope.
        ItemTooLarge: the item is still too large with every candidate offloaded.
    """
    result = dict(item)
    names = [name for name in candidates if name in result]
    for name in names:
        value: object = result[name]
        if not isinstance(value, Mapping) or set(cast(Mapping[str, object], value)) not in ({"inline"}, {"blob"}):
            raise ValueError(f'attribute "{name}" must hold a payload envelope ({{"inline": …}} or {{"blob": …}})')
    size = item_size(result)
    while size > limit:
        movable = [name for name in names if _is_inline(result[name])]
        if not movable:
            raise ItemTooLarge(f"item is {size} bytes with every candidate offloaded (limit {limit})")
        largest = max(movable, key=lambda name: _value_size(result[name]))
        result[largest] = offloader.to_blob(result[largest]["inline"])
        size = item_size(result)
    return result
