"""Fold UIMessageChunks into the assistant UIMessage, with the AI SDK's aggregation rules.

Mirrors `processUIMessageStream` (`packages/ai/src/ui/process-ui-message-stream.ts`) and
`readUIMessageStream` (`packages/ai/src/ui-message-stream/read-ui-message-stream.ts`) of `ai@7.0.173`.
The same reducer serves the client-side view (tests compare it with the SDK) and the server, which
persists the message that its own stream produces.

It stays linear in the size of the stream: text and reasoning deltas are collected as pieces and
joined only when a snapshot is read, and streamed tool input is kept in a `PartialJson` that scans
each character once and parses only on a read. Reading a snapshot after every chunk is the
caller's choice (and then each read costs the size of the message, as in the SDK).

A protocol violation (a delta for a part that was never started, an output for an unknown tool
call, a response for an unknown approval) raises `UIMessageStreamError` with the chunk type and id,
and leaves the message as it was before that chunk.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from ..errors import UIMessageStreamError
from .chunks import (
    AbortChunk,
    CustomChunk,
    DataChunk,
    ErrorChunk,
    FileChunk,
    FinishChunk,
    FinishStepChunk,
    MessageMetadataChunk,
    ReasoningDeltaChunk,
    ReasoningEndChunk,
    ReasoningFileChunk,
    ReasoningStartChunk,
    ResetStepChunk,
    SourceDocumentChunk,
    SourceUrlChunk,
    StartChunk,
    StartStepChunk,
    SteeringMessageChunk,
    TextDeltaChunk,
    TextEndChunk,
    TextStartChunk,
    ToolApprovalRequestChunk,
    ToolApprovalResponseChunk,
    ToolInputAvailableChunk,
    ToolInputDeltaChunk,
    ToolInputErrorChunk,
    ToolInputStartChunk,
    ToolOutputAvailableChunk,
    ToolOutputDeniedChunk,
    ToolOutputErrorChunk,
    UIMessageChunk,
)
from .merge import merge_metadata
from .partial_json import UNPARSEABLE, PartialJson
from .parts import UIMessage

__all__ = ["ReduceResult", "UIMessageReducer", "read_ui_message_stream", "reduce_ui_message_stream"]

Part = dict[str, Any]
"""A part in wire form (camelCase keys). The reducer works on plain dicts, as the SDK does."""

_UNSET: Final = UNPARSEABLE
"""JavaScript's `undefined`: assigning it removes the key."""

_OUTPUT_STATES: Final = frozenset({"output-available", "output-error"})


def _assign(part: Part, key: str, value: Any) -> None:
    if value is _UNSET:
        part.pop(key, None)
    else:
        part[key] = value


def _given(chunk: Any, field: str) -> Any:
    """The chunk's value for `field`, or `_UNSET` when the key was absent on the wire."""
    return getattr(chunk, field) if field in chunk.model_fields_set else _UNSET


def _or_unset(value: Any) -> Any:
    return _UNSET if value is None else value


def _is_tool(part: Part) -> bool:
    part_type: str = part["type"]
    return part_type == "dynamic-tool" or part_type.startswith("tool-")


def _is_static_tool(part: Part) -> bool:
    return part["type"].startswith("tool-")


def _approval_id(part: Part) -> str | None:
    approval: dict[str, Any] | None = part.get("approval")
    return None if approval is None else approval.get("id")


def _tool_name(part: Part) -> str:
    return part["toolName"] if part["type"] == "dynamic-tool" else part["type"][len("tool-") :]


@dataclass(slots=True)
class _PartialToolCall:
    json: PartialJson
    tool_name: str
    input_encoding: str | None
    dynamic: bool
    title: str | None
    tool_metadata: Any


class _LazyText:
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
class _LazyInput:
    part: Part
    partial: _PartialToolCall

    def flush(self) -> None:
        text = self.partial.json.text()
        value = text if self.partial.input_encoding == "text" else self.partial.json.value()
        _assign(self.part, "input", value)
        self.part["rawInput"] = text


class UIMessageReducer:
    """Incremental state of one assistant message being built from a chunk stream.

    Args:
        message: An existing message to continue (only an assistant message is continued, as in the SDK).
        message_id: The id of a new message when `message` is not an assistant message.
        reset_on_message_id_change: A `start` with a different `messageId` begins a fresh message
            (what `readUIMessageStream` does).
        reset_on_first_start: The first `start` begins a fresh message (what `Chat` does with a
            resumed stream, which is a full replay).
        on_error: Called with the text of each `error` chunk.
        on_data: Called with each data chunk, transient or not, once it is accepted.
    """

    def __init__(
        self,
        message: UIMessage | dict[str, Any] | None = None,
        *,
        message_id: str = "",
        reset_on_message_id_change: bool = True,
        reset_on_first_start: bool = False,
        on_error: Callable[[str], None] | None = None,
        on_data: Callable[[DataChunk], None] | None = None,
    ) -> None:
        self._reset_on_id_change = reset_on_message_id_change
        self._reset_on_first_start = reset_on_first_start
        self._seen_start = False
        self._on_error = on_error
        self._on_data = on_data
        self.finish_reason: str | None = None
        """The `finishReason` of the last `finish` chunk that had one."""
        self.aborted = False
        """True once an `abort` chunk arrived."""
        self._reset(_as_dict(message), message_id)

    # -- state ----------------------------------------------------------------------------

    def _reset(self, last: dict[str, Any] | None, message_id: str) -> None:
        if last is not None and last.get("role") == "assistant":
            self._message: dict[str, Any] = copy.deepcopy(last)
            self._message.setdefault("parts", [])
        else:
            self._message = {"id": message_id, "role": "assistant", "parts": []}
        self._parts: list[Part] = self._message["parts"]
        self._active_text: dict[str, _LazyText] = {}
        self._active_reasoning: dict[str, _LazyText] = {}
        self._partial_tools: dict[str, _PartialToolCall] = {}
        self._lazy_text: dict[int, _LazyText] = {}
        self._lazy_inputs: dict[int, _LazyInput] = {}
        for part in self._current_step_parts():
            if _is_tool(part) and part.get("state") == "input-streaming":
                raw = part.get("rawInput")
                self._partial_tools[part["toolCallId"]] = _PartialToolCall(
                    json=PartialJson(raw if isinstance(raw, str) else ""),
                    tool_name=_tool_name(part),
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
            if _is_tool(part) and part["toolCallId"] == tool_call_id:
                return part
        for part in reversed(self._parts):
            if _is_tool(part) and part["toolCallId"] == tool_call_id:
                return part
        raise UIMessageStreamError(
            chunk_type="tool-invocation",
            chunk_id=tool_call_id,
            message=f'No tool invocation found for tool call ID "{tool_call_id}".',
        )

    # -- tool part updates (the SDK's updateToolPart / updateDynamicToolPart) --------------

    def _update_tool_part(
        self, dynamic: bool, fields: dict[str, Any], existing: Part | None = None, *, flush: bool = True
    ) -> Part:
        state: str = fields["state"]
        tool_call_id: str = fields["toolCallId"]
        part = existing
        if part is None:
            for candidate in self._current_step_parts():
                is_match = candidate["type"] == "dynamic-tool" if dynamic else _is_static_tool(candidate)
                if is_match and candidate["toolCallId"] == tool_call_id:
                    part = candidate
                    break
        provider_metadata = fields.get("providerMetadata")
        metadata_key = "resultProviderMetadata" if state in _OUTPUT_STATES else "callProviderMetadata"
        if part is not None:
            if flush:
                self._flush_part(part)
            else:
                self._lazy_inputs.pop(id(part), None)
            part["state"] = state
            if dynamic:
                part["toolName"] = fields["toolName"]
            else:
                part["type"] = f"tool-{fields['toolName']}"
            for key in ("input", "output", "errorText", "rawInput"):
                _assign(part, key, fields.get(key, _UNSET))
            _assign(part, "inputEncoding", _or_unset(fields.get("inputEncoding")))
            _assign(part, "preliminary", _or_unset(fields.get("preliminary")))
            if fields.get("title") is not None:
                part["title"] = fields["title"]
            if fields.get("toolMetadata") is not None:
                part["toolMetadata"] = fields["toolMetadata"]
            if fields.get("providerExecuted") is not None:
                part["providerExecuted"] = fields["providerExecuted"]
            if provider_metadata is not None:
                part[metadata_key] = provider_metadata
            return part
        new_part: Part = (
            {"type": "dynamic-tool", "toolName": fields["toolName"]}
            if dynamic
            else {"type": f"tool-{fields['toolName']}"}
        )
        part = new_part
        part["toolCallId"] = tool_call_id
        part["state"] = state
        keys = (
            "title",
            "toolMetadata",
            "input",
            "inputEncoding",
            "output",
            "errorText",
            "providerExecuted",
            "preliminary",
        )
        for key in keys if dynamic else (*keys, "rawInput"):
            value = fields.get(key, _UNSET)
            if value is not _UNSET and not (value is None and key not in ("input", "output")):
                part[key] = value
        if provider_metadata is not None:
            part[metadata_key] = provider_metadata
        self._parts.append(part)
        return part

    # -- the reducer ------------------------------------------------------------------------

    def apply(self, chunk: UIMessageChunk) -> bool:  # noqa: C901 - one exhaustive dispatch over chunk types
        """Apply one chunk. Returns True when the message visibly changed (the SDK's `write()`)."""
        match chunk:
            case TextStartChunk() | ReasoningStartChunk():
                is_text = isinstance(chunk, TextStartChunk)
                part: Part = {"type": "text"}
                if not is_text:
                    part = {"type": "reasoning", "id": chunk.id}
                part["text"] = ""
                if chunk.provider_metadata is not None:
                    part["providerMetadata"] = chunk.provider_metadata
                part["state"] = "streaming"
                lazy = _LazyText(part)
                (self._active_text if is_text else self._active_reasoning)[chunk.id] = lazy
                self._lazy_text[id(part)] = lazy
                self._parts.append(part)
                return True
            case TextDeltaChunk() | ReasoningDeltaChunk():
                lazy = self._active(chunk)
                lazy.pieces.append(chunk.delta)
                if chunk.provider_metadata is not None:
                    lazy.part["providerMetadata"] = chunk.provider_metadata
                return True
            case TextEndChunk() | ReasoningEndChunk():
                lazy = self._active(chunk)
                lazy.flush()
                part = lazy.part
                part["state"] = "done"
                if isinstance(chunk, TextEndChunk) and chunk.citations is not None:
                    part["citations"] = copy.deepcopy(chunk.citations)
                if chunk.provider_metadata is not None:
                    part["providerMetadata"] = chunk.provider_metadata
                del (self._active_text if isinstance(chunk, TextEndChunk) else self._active_reasoning)[chunk.id]
                self._lazy_text.pop(id(part), None)
                return True
            case CustomChunk():
                part = {"type": "custom", "kind": chunk.kind}
                if chunk.provider_metadata is not None:
                    part["providerMetadata"] = chunk.provider_metadata
                self._parts.append(part)
                return True
            case FileChunk() | ReasoningFileChunk():
                part = {"type": chunk.type, "mediaType": chunk.media_type, "url": chunk.url}
                if chunk.provider_metadata is not None:
                    part["providerMetadata"] = chunk.provider_metadata
                self._parts.append(part)
                return True
            case SourceUrlChunk() | SourceDocumentChunk():
                self._parts.append(chunk.to_wire())
                return True
            case ToolInputStartChunk():
                return self._tool_input_start(chunk)
            case ToolInputDeltaChunk():
                return self._tool_input_delta(chunk)
            case ToolInputAvailableChunk():
                self._update_tool_part(
                    bool(chunk.dynamic),
                    {
                        "toolCallId": chunk.tool_call_id,
                        "toolName": chunk.tool_name,
                        "state": "input-available",
                        "input": _given(chunk, "input"),
                        "providerExecuted": chunk.provider_executed,
                        "providerMetadata": chunk.provider_metadata,
                        "title": chunk.title,
                        "toolMetadata": chunk.tool_metadata,
                    },
                )
                return True
            case ToolInputErrorChunk():
                existing = next(
                    (p for p in self._current_step_parts() if _is_tool(p) and p["toolCallId"] == chunk.tool_call_id),
                    None,
                )
                dynamic = existing["type"] == "dynamic-tool" if existing is not None else bool(chunk.dynamic)
                self._update_tool_part(
                    dynamic,
                    {
                        "toolCallId": chunk.tool_call_id,
                        "toolName": chunk.tool_name,
                        "state": "output-error",
                        "input": _given(chunk, "input"),
                        "errorText": chunk.error_text,
                        "providerExecuted": chunk.provider_executed,
                        "providerMetadata": chunk.provider_metadata,
                        "toolMetadata": chunk.tool_metadata,
                    },
                )
                return True
            case ToolApprovalRequestChunk():
                part = self._find_tool_invocation(chunk.tool_call_id)
                self._flush_part(part)
                part["state"] = "approval-requested"
                approval: dict[str, Any] = {"id": chunk.approval_id}
                if chunk.approval_descriptor is not None:
                    approval["descriptor"] = chunk.approval_descriptor
                if "input_schema_input" in chunk.model_fields_set:
                    approval["inputSchemaInput"] = chunk.input_schema_input
                if chunk.reason is not None:
                    approval["requestReason"] = chunk.reason
                if chunk.is_automatic is True:
                    approval["isAutomatic"] = True
                if chunk.signature is not None:
                    approval["signature"] = chunk.signature
                part["approval"] = approval
                return True
            case ToolApprovalResponseChunk():
                return self._approval_response(chunk)
            case ToolOutputDeniedChunk():
                part = self._find_tool_invocation(chunk.tool_call_id)
                self._flush_part(part)
                part["state"] = "output-denied"
                return True
            case ToolOutputAvailableChunk() | ToolOutputErrorChunk():
                return self._tool_output(chunk)
            case SteeringMessageChunk():
                self._parts.append({"type": "steering-message", "id": chunk.id, "parts": chunk.parts})
                return True
            case StartStepChunk():
                self._parts.append({"type": "step-start"})
                return False
            case FinishStepChunk():
                # ai 7.0.173: parts are closed by their own end chunks (7.0.77 closed them here).
                return False
            case ResetStepChunk():
                return self._reset_step()
            case StartChunk():
                return self._start(chunk)
            case FinishChunk():
                if chunk.finish_reason is not None:
                    self.finish_reason = chunk.finish_reason
                return self._merge_metadata(chunk.message_metadata)
            case MessageMetadataChunk():
                return self._merge_metadata(chunk.message_metadata)
            case ErrorChunk():
                if self._on_error is not None:
                    self._on_error(chunk.error_text)
                return False
            case AbortChunk():
                self.aborted = True
                return False
            case DataChunk():
                return self._data(chunk)

    def _active(self, chunk: TextDeltaChunk | TextEndChunk | ReasoningDeltaChunk | ReasoningEndChunk) -> _LazyText:
        is_text = isinstance(chunk, TextDeltaChunk | TextEndChunk)
        lazy = (self._active_text if is_text else self._active_reasoning).get(chunk.id)
        if lazy is None:
            kind = "text" if is_text else "reasoning"
            raise UIMessageStreamError(
                chunk_type=chunk.type,
                chunk_id=chunk.id,
                message=(
                    f'Received {chunk.type} for missing {kind} part with ID "{chunk.id}". '
                    f'Ensure a "{kind}-start" chunk is sent before any "{chunk.type}" chunks.'
                ),
            )
        return lazy

    def _tool_input_start(self, chunk: ToolInputStartChunk) -> bool:
        self._partial_tools[chunk.tool_call_id] = _PartialToolCall(
            json=PartialJson(),
            tool_name=chunk.tool_name,
            input_encoding=chunk.input_encoding,
            dynamic=bool(chunk.dynamic),
            title=chunk.title,
            tool_metadata=chunk.tool_metadata,
        )
        self._update_tool_part(
            bool(chunk.dynamic),
            {
                "toolCallId": chunk.tool_call_id,
                "toolName": chunk.tool_name,
                "state": "input-streaming",
                "inputEncoding": chunk.input_encoding,
                "providerExecuted": chunk.provider_executed,
                "title": chunk.title,
                "toolMetadata": chunk.tool_metadata,
                "providerMetadata": chunk.provider_metadata,
            },
        )
        return True

    def _tool_input_delta(self, chunk: ToolInputDeltaChunk) -> bool:
        partial = self._partial_tools.get(chunk.tool_call_id)
        if partial is None:
            raise UIMessageStreamError(
                chunk_type="tool-input-delta",
                chunk_id=chunk.tool_call_id,
                message=(
                    f'Received tool-input-delta for missing tool call with ID "{chunk.tool_call_id}". '
                    'Ensure a "tool-input-start" chunk is sent before any "tool-input-delta" chunks.'
                ),
            )
        partial.json.append(chunk.input_text_delta)
        part = self._update_tool_part(
            partial.dynamic,
            {
                "toolCallId": chunk.tool_call_id,
                "toolName": partial.tool_name,
                "state": "input-streaming",
                "inputEncoding": partial.input_encoding,
                "title": partial.title,
                "toolMetadata": partial.tool_metadata,
            },
            flush=False,  # the previous partial value is replaced, so it is never computed
        )
        # The partial input and raw text are computed when the message is read, not per delta.
        self._lazy_inputs[id(part)] = _LazyInput(part, partial)
        return True

    def _approval_response(self, chunk: ToolApprovalResponseChunk) -> bool:
        part = next(
            (p for p in self._parts if _is_tool(p) and _approval_id(p) == chunk.approval_id),
            None,
        )
        if part is None:
            raise UIMessageStreamError(
                chunk_type="tool-approval-response",
                chunk_id=chunk.approval_id,
                message=f'No tool invocation found for approval ID "{chunk.approval_id}".',
            )
        self._flush_part(part)
        approval: dict[str, Any] = dict(part.get("approval") or {"id": chunk.approval_id})
        approval["id"] = chunk.approval_id
        approval["approved"] = chunk.approved
        if chunk.reason is not None:
            approval["reason"] = chunk.reason
        part["state"] = "approval-responded"
        part["approval"] = approval
        if chunk.provider_executed is not None:
            part["providerExecuted"] = chunk.provider_executed
        if chunk.provider_metadata is not None:
            part["callProviderMetadata"] = chunk.provider_metadata
        return True

    def _tool_output(self, chunk: ToolOutputAvailableChunk | ToolOutputErrorChunk) -> bool:
        part = self._find_tool_invocation(chunk.tool_call_id)
        self._flush_part(part)
        dynamic = part["type"] == "dynamic-tool"
        fields: dict[str, Any] = {
            "toolCallId": chunk.tool_call_id,
            "toolName": _tool_name(part),
            "input": part.get("input", _UNSET),
            "providerExecuted": chunk.provider_executed,
            "providerMetadata": chunk.provider_metadata,
            "title": part.get("title"),
            "toolMetadata": chunk.tool_metadata if chunk.tool_metadata is not None else part.get("toolMetadata"),
        }
        if isinstance(chunk, ToolOutputAvailableChunk):
            fields.update(state="output-available", output=chunk.output, preliminary=chunk.preliminary)
        else:
            fields.update(state="output-error", errorText=chunk.error_text)
            if not dynamic:
                fields["rawInput"] = part.get("rawInput", _UNSET)
        self._update_tool_part(dynamic, fields, existing=part)
        return True

    def _reset_step(self) -> bool:
        start = self._current_step_start()
        self._active_text = {}
        self._active_reasoning = {}
        self._partial_tools = {}
        if start >= len(self._parts):
            return False
        for part in self._parts[start:]:
            self._lazy_text.pop(id(part), None)
            self._lazy_inputs.pop(id(part), None)
        del self._parts[start:]
        return True

    def _start(self, chunk: StartChunk) -> bool:
        should_reset = (self._reset_on_first_start and not self._seen_start) or (
            self._reset_on_id_change and chunk.message_id is not None and chunk.message_id != self._message["id"]
        )
        self._seen_start = True
        if should_reset:
            self._reset(None, chunk.message_id if chunk.message_id is not None else self._message["id"])
            self.finish_reason = None
        if chunk.message_id is not None:
            self._message["id"] = chunk.message_id
        changed = self._merge_metadata(chunk.message_metadata)
        return should_reset or chunk.message_id is not None or changed

    def _merge_metadata(self, update: Any) -> bool:
        if update is None:
            return False
        self._message["metadata"] = merge_metadata(self._message.get("metadata"), update)
        return True

    def _data(self, chunk: DataChunk) -> bool:
        if chunk.transient:
            if self._on_data is not None:
                self._on_data(chunk)
            return False
        existing = None
        if chunk.id is not None:
            existing = next((p for p in self._parts if p["type"] == chunk.type and p.get("id") == chunk.id), None)
        if existing is not None:
            existing["data"] = chunk.data
        else:
            self._parts.append(chunk.to_wire())
        if self._on_data is not None:
            self._on_data(chunk)
        return True


def _as_dict(message: UIMessage | dict[str, Any] | None) -> dict[str, Any] | None:
    if message is None or isinstance(message, dict):
        return message
    return message.to_wire()


@dataclass(frozen=True, slots=True)
class ReduceResult:
    """What a whole stream amounted to."""

    message: dict[str, Any] | None
    """The final message in wire form, or None when no chunk ever changed it."""
    error: UIMessageStreamError | None
    """The protocol violation that stopped the reduction, if any."""
    errors: tuple[str, ...]
    """The texts of the stream's `error` chunks."""
    finish_reason: str | None
    aborted: bool


def reduce_ui_message_stream(
    chunks: Iterable[UIMessageChunk],
    *,
    message: UIMessage | dict[str, Any] | None = None,
    terminate_on_error: bool = False,
) -> ReduceResult:
    """Reduce a whole stream to its final message, without per-chunk snapshots (linear time).

    The message is the reducer's whole final state, as the SDK's server-side `onEnd` sees it
    (`handle-ui-message-stream-finish.ts`): a trailing `step-start`, which triggers no client
    update, is included. It is None when no chunk ever changed the message (when
    `readUIMessageStream` would yield nothing). Like `readUIMessageStream`, a protocol violation
    ends the reduction with the message built before it; with `terminate_on_error` it is raised.
    """
    errors: list[str] = []
    reducer = UIMessageReducer(message, on_error=errors.append)
    changed = False
    violation: UIMessageStreamError | None = None
    for chunk in chunks:
        try:
            changed = reducer.apply(chunk) or changed
        except UIMessageStreamError as error:
            if terminate_on_error:
                raise
            violation = error
            break
    return ReduceResult(
        message=copy.deepcopy(reducer.message()) if changed else None,
        error=violation,
        errors=tuple(errors),
        finish_reason=reducer.finish_reason,
        aborted=reducer.aborted,
    )


def read_ui_message_stream(
    chunks: Iterable[UIMessageChunk],
    *,
    message: UIMessage | dict[str, Any] | None = None,
    on_error: Callable[[Exception], None] | None = None,
    terminate_on_error: bool = False,
) -> Iterator[dict[str, Any]]:
    """Yield a snapshot of the message after every visible change (the SDK's `readUIMessageStream`).

    Error chunks and protocol violations go to `on_error`; a violation ends the iteration (or is
    raised with `terminate_on_error`).
    """

    def error_text(text: str) -> None:
        if on_error is not None:
            on_error(Exception(text))

    reducer = UIMessageReducer(message, on_error=error_text)
    for chunk in chunks:
        try:
            changed = reducer.apply(chunk)
        except UIMessageStreamError as error:
            if on_error is not None:
                on_error(error)
            if terminate_on_error:
                raise
            return
        if changed:
            yield reducer.snapshot()
