"""A steering message inside the assistant message it steered: the AI SDK's `steering-message`.

A message sent while a run works, under the `steer` policy, reaches the model at the run's next
step boundary as a user message. The stream shows it there, live, as the SDK's own
`{"type": "steering-message", "id", "parts"}` chunk, and the assistant message keeps it as a part
in that position (between the parts of the step before and the `step-start` of the step after);
`convert_to_model_messages` turns that part back into a user message between the two steps, as
the SDK's `convertToModelMessages` does, so the next turn's history has it where the model saw it.
"""

from __future__ import annotations

from typing import Any, Final, cast

from pydantic import JsonValue

from ..protocol._ui_validation import validate_ui_messages
from ..protocol.model_messages import ModelMessage
from ..protocol.to_model_messages import convert_to_model_messages

__all__ = ["STEER_PART", "steer_chunk", "user_model_messages"]

STEER_PART: Final = "steering-message"
_CONTENT = frozenset({"text", "file"})
"""What a steering message may hold (the SDK's `SteeringMessagePart.parts`)."""


def _content(message: dict[str, JsonValue]) -> list[JsonValue]:
    parts = cast(list[Any], message.get("parts") or [])
    return [p for p in parts if isinstance(p, dict) and cast(dict[str, Any], p).get("type") in _CONTENT]


def steer_chunk(message: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """The stream chunk (and, reduced, the part) that shows a steering user message in place."""
    return {"type": STEER_PART, "id": str(message["id"]), "parts": _content(message)}


def user_model_messages(message: dict[str, JsonValue]) -> list[ModelMessage]:
    """A steering user message (UIMessage wire form) as the model reads it."""
    wire = {"id": message["id"], "role": "user", "parts": _content(message)}
    return convert_to_model_messages(validate_ui_messages([wire], keep_extensions=True))
