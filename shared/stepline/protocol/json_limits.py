r"""`parse_json_body`: a request body from an untrusted peer, as JSON that every later layer can handle.

`json.loads` accepts inputs that fail much later, far from the request that carried them: a lone
surrogate (the escape `\ud800` alone) is a Python `str` that cannot be encoded as UTF-8, so it
passes validation and fails in the store's encoder; thousands of nested arrays raise
`RecursionError` in the parser (or in pydantic, or in the encoder) instead of a validation error.
This module is the one place where a body becomes JSON, with these limits checked before anything
else looks at it:

- the body is UTF-8 JSON as `JSON.parse` reads it (no `NaN`/`Infinity`);
- no value is nested deeper than `MAX_DEPTH` (a chat body is about six levels before tool inputs);
- every string, and every object key, is valid Unicode (no lone surrogate).

A refusal is an `InvalidUIMessageError` whose path names where the problem is
(`messages[0].parts[1].text: is not valid Unicode (a lone surrogate)`), never the value.
"""

from __future__ import annotations

import re
from typing import Final, cast

from pydantic import JsonValue

from ..errors import InvalidUIMessageError
from ._json import dumps, loads_strict

__all__ = ["MAX_DEPTH", "check_json_value", "json_path", "parse_json_body"]

MAX_DEPTH: Final = 64
"""Levels of arrays and objects in a body (the top-level object is level 1)."""
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_IDENTIFIER: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")

Path = tuple[str | int, ...]
_Link = tuple["_Link", str | int] | None
"""A path as a chain of (parent, key) links, made into a `Path` only for an error."""


def _unlink(link: _Link) -> Path:
    elements: list[str | int] = []
    while link is not None:
        link, element = link
        elements.append(element)
    return tuple(reversed(elements))


def json_path(path: Path, root: str = "") -> str:
    """`("messages", 0, "parts")` as `messages[0].parts`, the paths of the SDK's validation errors."""
    text = root
    for element in path:
        if isinstance(element, int):
            text += f"[{element}]"
        elif _IDENTIFIER.fullmatch(element):
            text += f".{element}" if text else element
        else:
            text += f"[{element!r}]"
    return text or "body"


def parse_json_body(data: bytes | str, *, max_depth: int = MAX_DEPTH) -> JsonValue:
    """The body as JSON, or `InvalidUIMessageError` naming what is wrong and where (see the module docstring)."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as error:
        raise InvalidUIMessageError([("body", f"is not UTF-8 text (byte {error.start})")]) from None
    try:
        value = loads_strict(text)
    except RecursionError:
        raise InvalidUIMessageError([("body", f"is nested deeper than {max_depth} levels")]) from None
    except ValueError as error:  # JSONDecodeError's message is a position, never the input
        raise InvalidUIMessageError([("body", f"is not JSON: {error}")]) from None
    check_json_value(value, max_depth=max_depth)
    return cast(JsonValue, value)


def check_json_value(value: object, *, max_depth: int = MAX_DEPTH, root: str = "") -> None:
    """Refuse a decoded value nested deeper than `max_depth` or holding a lone surrogate.

    Iterative (the value may be as deep as the parser allowed) and cheap on a large body: the depth
    by a walk that visits arrays and objects only, the strings by encoding the whole value once, and
    only when that fails by a descent that bisects to the string to name.
    """
    _check_depth(value, max_depth, root)
    if _has_lone_surrogate(value):
        path, in_key = _surrogate_path(value)
        reason = "has a key that is not valid Unicode (a lone surrogate)" if in_key else "is not valid Unicode"
        raise InvalidUIMessageError([(json_path(path, root), reason if in_key else f"{reason} (a lone surrogate)")])


def _check_depth(value: object, max_depth: int, root: str) -> None:
    stack: list[tuple[object, int, _Link]] = [(value, 0, None)] if _container(value) else []
    while stack:
        node, depth, link = stack.pop()
        if depth >= max_depth:
            raise InvalidUIMessageError([(json_path(_unlink(link), root), f"is nested deeper than {max_depth} levels")])
        if isinstance(node, list):
            items = cast(list[object], node)
            if _CONTAINERS.isdisjoint(map(type, items)):  # C speed: most arrays hold no arrays or objects
                continue
            stack.extend([(item, depth + 1, (link, index)) for index, item in enumerate(items) if _container(item)])
        else:
            entries = cast(dict[str, object], node)
            if _CONTAINERS.isdisjoint(map(type, entries.values())):
                continue
            stack.extend([(item, depth + 1, (link, key)) for key, item in entries.items() if _container(item)])


_CONTAINERS: Final = frozenset({list, dict})


def _container(value: object) -> bool:
    return type(value) in _CONTAINERS


def _has_lone_surrogate(value: object) -> bool:
    try:
        dumps(value).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _surrogate_path(value: object) -> tuple[Path, bool]:
    """Where a lone surrogate of `value` is, and whether it is in an object key (bisecting, C speed)."""
    path: list[str | int] = []
    node = value
    while True:
        if isinstance(node, list):
            items = cast(list[object], node)
            index = _first_bad(items)
            path.append(index)
            node = items[index]
        elif isinstance(node, dict):
            entries = cast(dict[str, object], node)
            keys = list(entries)
            if _has_lone_surrogate(keys):
                return tuple(path), True
            key = keys[_first_bad(list(entries.values()))]
            path.append(key)
            node = entries[key]
        else:
            return tuple(path), False


def _first_bad(items: list[object]) -> int:
    """The index of an item holding a lone surrogate (one is known to), by halving the list."""
    low, high = 0, len(items)
    while high - low > 1:
        middle = (low + high) // 2
        if _has_lone_surrogate(items[low:middle]):
            high = middle
        else:
            low = middle
    return low
