"""JSON helpers that behave like JavaScript's `JSON.parse` / `JSON.stringify`.

The wire peers are JavaScript clients, so Stepline parses and prints JSON the way they do:
`NaN`/`Infinity` are rejected on input and never written, and output is compact UTF-8
(`JSON.stringify` without spacing, non-ASCII characters kept as they are).

A number too large for a double (`1e999999`, or an integer of 309 digits and more) is refused on
input: `JSON.parse` would read it as `Infinity`, which no JSON can carry back (`JSON.stringify`
writes `null`, Python's encoder refuses it), so it could only fail later or change on its way.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, cast

from pydantic import JsonValue

__all__ = ["JSONValue", "dumps", "json_copy", "loads_strict"]

JSONValue = JsonValue
"""Any JSON value (pydantic's recursive `JsonValue`)."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_MAYBE_HUGE = re.compile(r"[0-9][eE]|[0-9]{309}")
"""Where a number could overflow a double: an exponent, or 309 digits (the hooks that check are slower)."""
_MAYBE_HUGE_BYTES = re.compile(_MAYBE_HUGE.pattern.encode())


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError("a number is too large for a double")
    return value


def _finite_int(text: str) -> int:
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise ValueError("a number is too large for a double") from None
    return value


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON text as `JSON.parse` would (no NaN, Infinity or -Infinity), and no number beyond a double."""
    huge = _MAYBE_HUGE_BYTES.search(text) if isinstance(text, bytes) else _MAYBE_HUGE.search(text)
    if huge is None:
        return json.loads(text, parse_constant=_reject_constant)  # noqa: TID251 - this is the sanctioned wrapper
    return json.loads(  # noqa: TID251
        text, parse_constant=_reject_constant, parse_float=_finite_float, parse_int=_finite_int
    )


def dumps(value: Any) -> str:
    """Serialise like `JSON.stringify(value)`: compact separators, non-ASCII kept, no NaN."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def json_copy(value: Any) -> Any:
    """A copy of a JSON-shaped value: new dicts and lists, the (immutable) scalars shared."""
    if isinstance(value, Mapping):
        return {key: json_copy(item) for key, item in cast(Mapping[Any, Any], value).items()}
    if isinstance(value, list):
        return [json_copy(item) for item in cast(list[Any], value)]
    return value
