"""`convert_ui_messages_json`: JSON UIMessages to model messages, accepting what the SDK converts.

The SDK's `convertToModelMessages` (`ai@7.0.173`) does not validate its input; it filters and
converts. Stepline validates (its converter works on typed parts) but first does what the SDK does
before it looks at a part, so that an input the SDK converts is not refused for a reason the SDK
never checks:

- a message whose role is not `system`, `user` or `assistant` is `MessageConversionError`
  "Unsupported role: <role>", the SDK's own error;
- the SDK's part filter runs on the raw parts: with `ignore_incomplete_tool_calls` a tool part
  that has no result or decision (also one without any `state`) is dropped before validation, and
  an `approval-requested` part before the last user message is dropped too;
- an `output-denied` part without `approval` is converted (the default denial text), as the SDK does.

Other invalid input is still an `InvalidUIMessageError` naming the path (the SDK would convert some
of it into something, or throw a `TypeError` on the way).
"""

from __future__ import annotations

from typing import Any, Final, cast

from ..errors import InvalidUIMessageError, MessageConversionError
from ._ui_validation import validate_ui_messages
from .model_messages import ModelMessage
from .to_model_messages import convert_to_model_messages

__all__ = ["convert_ui_messages_json"]

_ROLES: Final = frozenset({"system", "user", "assistant"})
_FINISHED: Final = frozenset({"approval-responded", "output-error", "output-denied"})


def convert_ui_messages_json(
    value: object, *, ignore_incomplete_tool_calls: bool = False, **options: Any
) -> list[ModelMessage]:
    """Convert decoded JSON messages as `convertToModelMessages` would (see the module docstring).

    `options` are `convert_to_model_messages`'s other keyword arguments.

    Raises:
        MessageConversionError: An unsupported role, or what `convert_to_model_messages` raises.
        InvalidUIMessageError: Input the typed converter cannot take, with its path.
    """
    if not isinstance(value, list):
        raise InvalidUIMessageError([("messages", "must be an array of UI messages")])
    raw = cast(list[object], value)
    for message in raw:
        role = cast(dict[str, object], message).get("role") if isinstance(message, dict) else None
        if isinstance(role, str) and role not in _ROLES:
            raise MessageConversionError(f"Unsupported role: {role}")
    filtered = _sdk_part_filter(raw, ignore_incomplete_tool_calls)
    messages = validate_ui_messages(filtered, allow_system=True, keep_extensions=True, for_conversion=True)
    return convert_to_model_messages(messages, ignore_incomplete_tool_calls=ignore_incomplete_tool_calls, **options)


def _sdk_part_filter(messages: list[object], ignore_incomplete: bool) -> list[object]:
    """The filter `convertToModelMessages` applies to the raw parts before converting them."""
    entries = [cast(dict[str, object], m) if isinstance(m, dict) else None for m in messages]
    last_user = max((i for i, e in enumerate(entries) if e is not None and e.get("role") == "user"), default=-1)
    if not ignore_incomplete and last_user <= 0:
        return messages
    out: list[object] = []
    for index, (message, entry) in enumerate(zip(messages, entries, strict=True)):
        parts = entry.get("parts") if entry is not None else None
        if entry is None or not isinstance(parts, list):
            out.append(message)
            continue
        kept = [p for p in cast(list[object], parts) if _keeps(p, index >= last_user, ignore_incomplete)]
        out.append({**entry, "parts": kept})
    return out


def _keeps(part: object, at_or_after_last_user: bool, ignore_incomplete: bool) -> bool:
    entry = cast(dict[str, object], part) if isinstance(part, dict) else None
    kind = entry.get("type") if entry is not None else None
    if entry is None or not isinstance(kind, str) or not (kind.startswith("tool-") or kind == "dynamic-tool"):
        return True
    state = entry.get("state")
    if state == "approval-requested" and not at_or_after_last_user:
        return False
    if not ignore_incomplete:
        return True
    if state == "output-available":
        return entry.get("preliminary") is not True
    return isinstance(state, str) and state in _FINISHED  # any JSON value: a list is not hashable
