"""Deep merge of message metadata, as the AI SDK's `mergeObjects` (`packages/ai/src/util/merge-objects.ts`).

Nested objects merge key by key; arrays and scalars replace; an explicit `null` overwrites (it does
not keep the old value, as some servers of the protocol have it). Keys that could pollute
a JavaScript prototype are skipped, so what Stepline stores is what a browser would hold.
"""

from __future__ import annotations

from typing import Any, cast

__all__ = ["merge_metadata"]

_SKIPPED_KEYS = frozenset({"__proto__", "constructor", "prototype"})


def merge_metadata(base: Any, update: Any) -> Any:
    """Return `update` merged over `base` without mutating either."""
    if update is None:
        return base
    if base is None or not isinstance(update, dict) or not isinstance(base, dict):
        # Replacing a non-object outright is a deliberate simplification of JavaScript's spread of
        # primitives (which only matters for metadata that is not an object at all).
        return cast(Any, update)
    result: dict[str, Any] = dict(cast(dict[str, Any], base))
    for key, value in cast(dict[str, Any], update).items():
        if key in _SKIPPED_KEYS:
            continue
        current = result.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            result[key] = merge_metadata(current, value)
        else:
            result[key] = value
    return result
