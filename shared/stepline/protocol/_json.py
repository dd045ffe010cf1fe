"""JSON helpers that behave like JavaScript's `JSON.parse` / `JSON.stringify`.

The wire peers are JavaScript clients, so Stepline parses and prints JSON the way they do:
`NaN`/`Infinity` are rejected on input and never written, and output is compact UTF-8
(`JSON.stringify` without spacing, non-ASCII characters kept as they are).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue

__all__ = ["JSONValue", "dumps", "loads_strict"]

JSONValue = JsonValue
"""Any JSON value (pydantic's recursive `JsonValue`)."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON text as `JSON.parse` would (no NaN, Infinity or -Infinity)."""
    return json.loads(text, parse_constant=_reject_constant)  # noqa: TID251 - this is the sanctioned wrapper


def dumps(value: Any) -> str:
    """Serialise like `JSON.stringify(value)`: compact separators, non-ASCII kept, no NaN."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
