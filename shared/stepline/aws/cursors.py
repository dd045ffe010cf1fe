"""The conversation list's cursor on DynamoDB: the query's `LastEvaluatedKey`, as an opaque token.

A cursor comes back from the client, so it is untrusted: `decode_cursor` accepts only the shape
`encode_cursor` writes (base64url of a JSON object of the index's four key attributes, strings)
with the caller's own partition (`U#{user}#...`). Anything else is `InvalidCursor`, a 400; before,
a token that was not base64 or not JSON was a 500, and one naming another partition reached DynamoDB.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Final, cast

from ..protocol._json import dumps, loads_strict
from ..store.errors import InvalidCursor

__all__ = ["decode_cursor", "encode_cursor"]

_KEYS: Final = frozenset({"pk", "sk", "gsi1pk", "gsi1sk"})
MAX_CURSOR: Final = 2048


def encode_cursor(last_key: dict[str, Any] | None) -> str | None:
    """The token for a page's `LastEvaluatedKey` (None at the end)."""
    return base64.urlsafe_b64encode(dumps(last_key).encode()).decode() if last_key else None


def decode_cursor(cursor: str, *, index_pk: str, user_id: str) -> dict[str, Any]:
    """The `ExclusiveStartKey` a token stands for, if this store could have written it for this user."""
    if len(cursor) > MAX_CURSOR:
        raise InvalidCursor("not a cursor this API gave out (too long)")
    try:
        value: object = loads_strict(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise InvalidCursor("not a cursor this API gave out") from None
    if not isinstance(value, dict) or frozenset(cast(dict[str, object], value)) != _KEYS:
        raise InvalidCursor("not a cursor this API gave out")
    key = cast(dict[str, object], value)
    strings: dict[str, str] = {}
    for name, attribute in key.items():
        text = cast(dict[str, object], attribute).get("S") if isinstance(attribute, dict) else None
        if not isinstance(text, str) or len(cast(dict[str, object], attribute)) != 1:
            raise InvalidCursor("not a cursor this API gave out")
        strings[name] = text
    if strings["gsi1pk"] != index_pk or not strings["pk"].startswith(f"U#{user_id}#"):
        raise InvalidCursor("not a cursor of this user's list")
    return {name: {"S": text} for name, text in strings.items()}
