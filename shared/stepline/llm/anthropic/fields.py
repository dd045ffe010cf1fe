"""Reading Anthropic's JSON loosely, and leaving out what is unknown, as the AI SDK's parts do.

The small helpers the stream, its server-tool results and the blocks sent back share: an event's
field is read as a dict, a list of dicts or a string only when it is one, and a part's JSON keeps
only the fields that have a value.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import JsonValue

__all__ = ["as_dict", "as_str", "dict_list", "pick", "some"]


def some(**fields: Any) -> dict[str, Any]:
    """The fields that have a value: a part's JSON leaves out what is unknown, as the AI SDK's does."""
    return {name: value for name, value in fields.items() if value is not None}


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def dict_list(value: Any) -> list[dict[str, Any]]:
    """`value`'s items as objects (an item that is not one reads as empty) when it is a list, else []."""
    return [as_dict(item) for item in cast("list[Any]", value)] if isinstance(value, list) else []


def as_str(value: Any) -> str | None:
    """`value` when it is a string, else None."""
    return value if isinstance(value, str) else None


def pick(source: dict[str, Any], **keys: str) -> dict[str, JsonValue]:
    """`{out: source[in]}` for the keys the block has: JSON drops what JavaScript leaves undefined, not null."""
    return {out: source[key] for out, key in keys.items() if key in source}
