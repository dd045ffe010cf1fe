"""The reducer's working state: the message in wire form, its open parts and its lazy buffers.

`UIMessageReducer` (reducer.py) folds chunks into this state. Here are the wire-form part helpers,
the buffers that keep the reducer linear (text deltas joined on a read, streamed tool input kept in
a `PartialJson`), and the lookups that every handler shares: the current step's parts and the tool
invocation a chunk refers to.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Final

from ..errors import UIMessageStreamError
from .partial_json import UNPARSEABLE, PartialJson
from .parts import UIMessage

Part = dict[str, Any]
"""A part in wire form (camelCase keys). The reducer works on plain dicts, as the SDK does."""

UNSET: Final = UNPARSEABLE
"""JavaScript's `undefined`: assigning it removes the key."""

OUTPUT_STATES: Final = frozenset({"output-available", "output-error"})


def assign(part: Part, key: str, value: Any) -> None:
    if value is UNSET:
        part.pop(key, None)
    else:
        part[key] = value


def given(chunk: Any, field: str) -> Any:
    """The chunk's value for `field`, or `UNSET` when the key was absent on the wire."""
    return getattr(chunk, field) if field in chunk.model_fields_set else UNSET


def or_unset(value: Any) -> Any:
    return UNSET if value is None else value


def is_tool(part: Part) -> bool:
    part_type: str = part["type"]
    return part_type == "dynamic-tool" or part_type.startswith("tool-")


def is_static_tool(part: Part) -> bool:
    return part["type"].startswith("tool-")


def approval_id_of(part: Part) -> str | None:
    approval: dict[str, Any] | None = part.get("approval")
    return None if approval is None else approval.get("id")


def tool_name_of(part: Part) -> str:
    return part["toolName"] if part["type"] == "dynamic-tool" else part["type"][len("tool-") :]


@dataclass(slots=True)
class PartialToolCall:
    json: PartialJson
    tool_name: str
    input_encoding: str | None
    dynamic: bool
    title: str | None
    tool_metadata: Any


class LazyText:
    """Text deltas of one open part, joined into `part["text"]` when the message is read."""

    __slots__ = ("part", "pieces")

    def __init__(self, part: Part) -> None:
        self.part = part
        self.pieces: list[str] = []

    def flush(self) -> None:
        if self.pieces:
            self.part["text"] += "".join(self.pieces)
            self.pieces.clear()


@dataclass(slots=True)
class LazyInput:
    part: Part
    partial: PartialToolCall

    def flush(self) -> None:
        text = self.partial.json.text()
        value = text if self.partial.input_encoding == "text" else self.partial.json.value()
        assign(self.part, "input", value)
        self.part["rawInput"] = text


class MessageState:
    """The message being built and the bookkeeping of its open parts (set by `_reset`)."""

    def _reset(self, last: dict[str, Any] | None, message_id: str) -> None:
        if last is not None and last.get("role") == "assistant":
            self._message: dict[str, Any] = copy.deepcopy(last)
            self._message.setdefault("parts", [])
        else:
            self._message = {"id": message_id, "role": "assistant", "parts": []}
        self._parts: list[Part] = self._message["parts"]
        self._active_text: dict[str, LazyText] = {}
        self._active_reasoning: dict[str, LazyText] = {}
        self._partial_tools: dict[str, PartialToolCall] = {}
        self._lazy_text: dict[int, LazyText] = {}
        self._lazy_inputs: dict[int, LazyInput] = {}
        for part in self._current_step_parts():
            if is_tool(part) and part.get("state") == "input-streaming":
                raw = part.get("rawInput")
                self._partial_tools[part["toolCallId"]] = PartialToolCall(
                    json=PartialJson(raw if isinstance(raw, str) else ""),
                    tool_name=tool_name_of(part),
                    input_encoding=part.get("inputEncoding"),
                    dynamic=part["type"] == "dynamic-tool",
                    title=part.get("title"),
                    tool_metadata=part.get("toolMetadata"),
                )

    def message(self) -> dict[str, Any]:
        """The message so far in wire form. It is live state: copy it before keeping or changing it."""
        self._flush()
        return self._message

    def snapshot(self) -> dict[str, Any]:
        """A deep copy of the message so far."""
        return copy.deepcopy(self.message())

    @property
    def message_id(self) -> str:
        return self._message["id"]

    def _flush(self) -> None:
        for lazy in self._lazy_text.values():
            lazy.flush()
        for lazy_input in self._lazy_inputs.values():
            lazy_input.flush()
        self._lazy_inputs.clear()

    def _flush_part(self, part: Part) -> None:
        lazy = self._lazy_inputs.pop(id(part), None)
        if lazy is not None:
            lazy.flush()

    def _current_step_start(self) -> int:
        parts = self._parts
        index = len(parts) - 1
        while index >= 0 and parts[index]["type"] != "step-start":
            index -= 1
        return index + 1

    def _current_step_parts(self) -> list[Part]:
        return self._parts[self._current_step_start() :]

    def _find_tool_invocation(self, tool_call_id: str) -> Part:
        for part in self._current_step_parts():
            if is_tool(part) and part["toolCallId"] == tool_call_id:
                return part
        for part in reversed(self._parts):
            if is_tool(part) and part["toolCallId"] == tool_call_id:
                return part
        raise UIMessageStreamError(
            chunk_type="tool-invocation",
            chunk_id=tool_call_id,
            message=f'No tool invocation found for tool call ID "{tool_call_id}".',
        )


def as_dict(message: UIMessage | dict[str, Any] | None) -> dict[str, Any] | None:
    if message is None or isinstance(message, dict):
        return message
    return message.to_wire()
