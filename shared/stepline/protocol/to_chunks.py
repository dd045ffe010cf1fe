"""TextStreamPart → UIMessageChunk: the mapping from what the loop emits to the UI stream, one pure function.

Mirrors `packages/ai/src/ui-message-stream/to-ui-message-chunk.ts` and the stateful wrapper
`to-ui-message-stream.ts` of `ai@7.0.173`.

Where the SDK's versions or its documentation differ, Stepline follows the released package (7.0.173):
- A failed tool call's `errorText` is the text the model receives (`getErrorMessage(error)`), not
  the `on_error` text, unless `redact_tool_errors` is set (it defaults to True when `on_error` is
  given). Replacing the text only in the UI would change the history the model sees next turn.
- An invalid tool call yields `tool-input-error` only; the `tool-error` that follows it in the loop
  is skipped (7.0.77 sent both).
Stream errors (`error` parts) always go through `on_error`, whose default reveals nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from pydantic import JsonValue

from ._json import dumps
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
    SourceDocumentChunk,
    SourceUrlChunk,
    StartChunk,
    StartStepChunk,
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
from .stream_parts import (
    Abort,
    Custom,
    Data,
    File,
    Finish,
    FinishStep,
    Raw,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningFile,
    ReasoningStart,
    Source,
    Start,
    StartStep,
    StreamError,
    TextDelta,
    TextEnd,
    TextStart,
    TextStreamPart,
    ToolApprovalRequest,
    ToolApprovalResponse,
    ToolCall,
    ToolError,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    ToolOutputDenied,
    ToolResult,
)

__all__ = [
    "DEFAULT_ERROR_TEXT",
    "UIChunkMapper",
    "UIStreamOptions",
    "error_message",
    "to_ui_message_chunk",
    "to_ui_message_stream",
    "to_ui_message_stream_async",
]

DEFAULT_ERROR_TEXT = "An error occurred."
"""What the client sees for a stream error when no `on_error` is given: nothing about the cause."""

ToolKind = Literal["static", "dynamic"]


def error_message(error: object) -> str:
    """The SDK's `getErrorMessage`: the text the model receives for a failed tool call.

    Strings pass through, exceptions read as `Name: message` (JavaScript's `Error.toString()`; an
    exception with a string `name` attribute, such as `AI_NoSuchToolError`, uses it), anything
    else as JSON.
    """
    if error is None:
        return "unknown error"
    if isinstance(error, str):
        return error
    if isinstance(error, BaseException):
        name = getattr(error, "name", None)
        name = name if isinstance(name, str) else type(error).__name__
        message = str(error)
        return f"{name}: {message}" if message else name
    return dumps(error)


@dataclass(frozen=True, slots=True, kw_only=True)
class UIStreamOptions:
    """How parts become chunks (the SDK's `toUIMessageStream` options).

    Attributes:
        tools: Declared tool kinds by name. A tool listed as static gets no `dynamic` flag; a dynamic
            one gets `dynamic: true`; an unlisted tool (provider-executed, or unknown) keeps the
            part's own flag.
        send_reasoning: Forward reasoning and reasoning files.
        send_sources: Forward sources (off by default, as in the SDK).
        send_start: Emit the `start` chunk.
        send_finish: Emit the `finish` chunk.
        on_error: Turns a stream error into client text. The default reveals nothing.
        redact_tool_errors: Send `on_error(error)` instead of the model's error text for failed tool
            calls. Defaults to True exactly when `on_error` is given.
        message_metadata: Called with every part; a non-None result is attached to `start`/`finish`
            or sent as a `message-metadata` chunk.
        response_message_id: The assistant message id announced in `start`.
    """

    tools: Mapping[str, ToolKind] | None = None
    send_reasoning: bool = True
    send_sources: bool = False
    send_start: bool = True
    send_finish: bool = True
    on_error: Callable[[object], str] | None = None
    redact_tool_errors: bool | None = None
    message_metadata: Callable[[TextStreamPart], JsonValue] | None = None
    response_message_id: str | None = None

    def error_text(self, error: object) -> str:
        return self.on_error(error) if self.on_error is not None else DEFAULT_ERROR_TEXT

    def tool_error_text(self, error: object) -> str:
        redact = self.redact_tool_errors if self.redact_tool_errors is not None else self.on_error is not None
        if redact:
            return self.error_text(error)
        try:
            return error_message(error)
        except (TypeError, ValueError):  # not serialisable: the model got no text either
            return self.error_text(error)

    def dynamic_flag(self, tool_name: str, own: bool | None) -> bool | None:
        kind = None if self.tools is None else self.tools.get(tool_name)
        if kind is None:
            return own
        return True if kind == "dynamic" else None


def _tool_flags(part: ToolInputStart | ToolCall | ToolResult | ToolError, options: UIStreamOptions) -> dict[str, Any]:
    flags: dict[str, Any] = {}
    if part.provider_executed is not None:
        flags["provider_executed"] = part.provider_executed
    if part.provider_metadata is not None:
        flags["provider_metadata"] = part.provider_metadata
    if part.tool_metadata is not None:
        flags["tool_metadata"] = part.tool_metadata
    tool_name = part.tool_name
    dynamic = options.dynamic_flag(tool_name, part.dynamic)
    if dynamic is not None:
        flags["dynamic"] = dynamic
    return flags


def _metadata(provider_metadata: Any) -> dict[str, Any]:
    return {} if provider_metadata is None else {"provider_metadata": provider_metadata}


def to_ui_message_chunk(  # noqa: C901 - one exhaustive match, the mapping table itself
    part: TextStreamPart,
    options: UIStreamOptions | None = None,
    *,
    message_metadata: JsonValue = None,
) -> UIMessageChunk | None:
    """Map one part to its chunk, or None for parts the UI never sees (`tool-input-end`, `raw`, …)."""
    opts = options or UIStreamOptions()
    match part:
        case TextStart(id=id_, provider_metadata=pm):
            return TextStartChunk(id=id_, **_metadata(pm))
        case TextDelta(id=id_, text=text, provider_metadata=pm):
            return TextDeltaChunk(id=id_, delta=text, **_metadata(pm))
        case TextEnd(id=id_, citations=citations, provider_metadata=pm):
            extra: dict[str, Any] = {} if citations is None else {"citations": [c.to_wire() for c in citations]}
            return TextEndChunk(id=id_, **extra, **_metadata(pm))
        case ReasoningStart(id=id_, provider_metadata=pm):
            return ReasoningStartChunk(id=id_, **_metadata(pm)) if opts.send_reasoning else None
        case ReasoningDelta(id=id_, text=text, provider_metadata=pm):
            return ReasoningDeltaChunk(id=id_, delta=text, **_metadata(pm)) if opts.send_reasoning else None
        case ReasoningEnd(id=id_, provider_metadata=pm):
            return ReasoningEndChunk(id=id_, **_metadata(pm)) if opts.send_reasoning else None
        case File(file=file, provider_metadata=pm):
            return FileChunk(media_type=file.media_type, url=_data_url(file.media_type, file.base64), **_metadata(pm))
        case ReasoningFile(file=file, provider_metadata=pm):
            if not opts.send_reasoning:
                return None
            url = _data_url(file.media_type, file.base64)
            return ReasoningFileChunk(media_type=file.media_type, url=url, **_metadata(pm))
        case Source():
            return _source_chunk(part) if opts.send_sources else None
        case Custom(kind=kind, provider_metadata=pm):
            return CustomChunk(kind=kind, **_metadata(pm))
        case ToolInputStart():
            extra = {k: v for k, v in (("input_encoding", part.input_encoding), ("title", part.title)) if v is not None}
            return ToolInputStartChunk(
                tool_call_id=part.id, tool_name=part.tool_name, **extra, **_tool_flags(part, opts)
            )
        case ToolInputDelta(id=id_, delta=delta):
            return ToolInputDeltaChunk(tool_call_id=id_, input_text_delta=delta)
        case ToolCall():
            return _tool_call_chunk(part, opts)
        case ToolApprovalRequest():
            extra = {
                k: v
                for k, v in (
                    ("reason", part.reason),
                    ("is_automatic", part.is_automatic),
                    ("signature", part.signature),
                )
                if v is not None
            }
            return ToolApprovalRequestChunk(
                approval_id=part.approval_id, tool_call_id=part.tool_call.tool_call_id, **extra
            )
        case ToolApprovalResponse():
            extra = {
                k: v
                for k, v in (("reason", part.reason), ("provider_executed", part.provider_executed))
                if v is not None
            }
            return ToolApprovalResponseChunk(approval_id=part.approval_id, approved=part.approved, **extra)
        case ToolResult():
            extra = {} if part.preliminary is None else {"preliminary": part.preliminary}
            return ToolOutputAvailableChunk(
                tool_call_id=part.tool_call_id, output=part.output, **extra, **_tool_flags(part, opts)
            )
        case ToolError():
            return ToolOutputErrorChunk(
                tool_call_id=part.tool_call_id, error_text=_tool_error_text(part, opts), **_tool_flags(part, opts)
            )
        case ToolOutputDenied(tool_call_id=tool_call_id):
            return ToolOutputDeniedChunk(tool_call_id=tool_call_id)
        case StreamError(error=error):
            return ErrorChunk(error_text=opts.error_text(error))
        case StartStep():
            return StartStepChunk()
        case FinishStep():
            return FinishStepChunk()
        case Start():
            if not opts.send_start:
                return None
            extra = {} if message_metadata is None else {"message_metadata": message_metadata}
            if opts.response_message_id is not None:
                extra["message_id"] = opts.response_message_id
            return StartChunk(**extra)
        case Finish(finish_reason=finish_reason):
            if not opts.send_finish:
                return None
            extra = {} if message_metadata is None else {"message_metadata": message_metadata}
            return FinishChunk(finish_reason=_ui_finish_reason(finish_reason), **extra)
        case Abort(reason=reason):
            return AbortChunk() if reason is None else AbortChunk(reason=reason)
        case Data(name=name, data=data, id=id_, transient=transient):
            extra = {k: v for k, v in (("id", id_), ("transient", transient)) if v is not None}
            return DataChunk(type=f"data-{name}", data=data, **extra)
        case ToolInputEnd() | Raw():
            return None
        case _:
            assert_never(part)


def _data_url(media_type: str, base64: str) -> str:
    return f"data:{media_type};base64,{base64}"


def _ui_finish_reason(finish_reason: str) -> Any:
    # The client rejects any finishReason outside its enum ("unknown" included, in 7.0.77 and 7.0.173),
    # and 7.0.77 rejects "interrupted"; such reasons travel as "other" (the raw value stays in metadata).
    return finish_reason if finish_reason in ("stop", "length", "content-filter", "tool-calls", "error") else "other"


def _source_chunk(part: Source) -> UIMessageChunk | None:
    if part.source_type == "url" and part.url is not None:
        extra: dict[str, Any] = {} if part.title is None else {"title": part.title}
        return SourceUrlChunk(source_id=part.id, url=part.url, **extra, **_metadata(part.provider_metadata))
    if part.source_type == "document" and part.media_type is not None and part.title is not None:
        extra = {} if part.filename is None else {"filename": part.filename}
        return SourceDocumentChunk(
            source_id=part.id,
            media_type=part.media_type,
            title=part.title,
            **extra,
            **_metadata(part.provider_metadata),
        )
    return None


def _tool_call_chunk(part: ToolCall, opts: UIStreamOptions) -> UIMessageChunk:
    extra: dict[str, Any] = {} if part.title is None else {"title": part.title}
    if part.invalid:
        # The model gets a tool result only for calls it did not execute itself.
        text = opts.error_text(part.error) if part.provider_executed else opts.tool_error_text(part.error)
        return ToolInputErrorChunk(
            tool_call_id=part.tool_call_id,
            tool_name=part.tool_name,
            input=part.input,
            error_text=text,
            **extra,
            **_tool_flags(part, opts),
        )
    return ToolInputAvailableChunk(
        tool_call_id=part.tool_call_id, tool_name=part.tool_name, input=part.input, **extra, **_tool_flags(part, opts)
    )


def _tool_error_text(part: ToolError, opts: UIStreamOptions) -> str:
    if part.provider_executed:
        # Provider errors keep their original data so model-message round trips still work.
        return part.error if isinstance(part.error, str) else dumps(part.error)
    return opts.tool_error_text(part.error)


class UIChunkMapper:
    """The stateful part of `toUIMessageStream`: metadata chunks and skipped duplicate tool errors."""

    def __init__(self, options: UIStreamOptions | None = None) -> None:
        self.options = options or UIStreamOptions()
        self._invalid_tool_calls: set[str] = set()

    def map(self, part: TextStreamPart) -> list[UIMessageChunk]:
        """The chunks for one part, in wire order (possibly none)."""
        if isinstance(part, ToolCall) and part.invalid:
            self._invalid_tool_calls.add(part.tool_call_id)
        skip = False
        if isinstance(part, ToolError) and not part.provider_executed and part.tool_call_id in self._invalid_tool_calls:
            self._invalid_tool_calls.discard(part.tool_call_id)
            skip = True
        metadata = self.options.message_metadata(part) if self.options.message_metadata is not None else None
        chunk = None if skip else to_ui_message_chunk(part, self.options, message_metadata=metadata)
        out: list[UIMessageChunk] = []
        if chunk is not None and not isinstance(part, FinishStep):
            out.append(chunk)
        if metadata is not None and not isinstance(part, Start | Finish):
            out.append(MessageMetadataChunk(message_metadata=metadata))
        if chunk is not None and isinstance(part, FinishStep):
            out.append(chunk)  # step metadata lands before the step boundary
        return out


def to_ui_message_stream(
    parts: Iterable[TextStreamPart], options: UIStreamOptions | None = None
) -> Iterator[UIMessageChunk]:
    """Map a whole part stream to UI chunks."""
    mapper = UIChunkMapper(options)
    for part in parts:
        yield from mapper.map(part)


async def to_ui_message_stream_async(
    parts: AsyncIterable[TextStreamPart], options: UIStreamOptions | None = None
) -> AsyncIterator[UIMessageChunk]:
    """`to_ui_message_stream` for an async part stream."""
    mapper = UIChunkMapper(options)
    async for part in parts:
        for chunk in mapper.map(part):
            yield chunk
