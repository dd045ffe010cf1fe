"""The Vercel AI SDK v7 UI Message Stream protocol (pure: the standard library and pydantic only).

Mirrors `ai@7.0.173`; docs/protocol.md lists where it differs from 7.0.77 and where Stepline adds to it.
The main entry points are re-exported here, imported on first use: a module that imports one of
the wire modules (`chunks`, `parts`, `stream_parts`, `model_messages`, `metadata`) loads that one
and what it needs, not the whole protocol (a Lambda function's cold start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy_exports import lazy_exports

if TYPE_CHECKING:
    from ._ui_validation import validate_ui_messages
    from .chunks import UIMessageChunk, parse_chunk
    from .metadata import MessageMetadata
    from .parts import UIMessage, UIMessagePart
    from .reducer import ReduceResult, UIMessageReducer, read_ui_message_stream, reduce_ui_message_stream
    from .request import ChatRequest, TurnPlan, parse_chat_request, plan_turn
    from .sse import UI_MESSAGE_STREAM_HEADERS, decode_ui_message_stream, encode_chunk, encode_ui_message_stream
    from .stream_parts import TextStreamPart
    from .to_chunks import UIChunkMapper, UIStreamOptions, to_ui_message_chunk, to_ui_message_stream
    from .to_model_messages import LegacyMessage, convert_to_model_messages
    from .writer import UIMessageStreamWriter, create_ui_message_stream

__all__ = [
    "UI_MESSAGE_STREAM_HEADERS",
    "ChatRequest",
    "LegacyMessage",
    "MessageMetadata",
    "ReduceResult",
    "TextStreamPart",
    "TurnPlan",
    "UIChunkMapper",
    "UIMessage",
    "UIMessageChunk",
    "UIMessagePart",
    "UIMessageReducer",
    "UIMessageStreamWriter",
    "UIStreamOptions",
    "convert_to_model_messages",
    "create_ui_message_stream",
    "decode_ui_message_stream",
    "encode_chunk",
    "encode_ui_message_stream",
    "parse_chat_request",
    "parse_chunk",
    "plan_turn",
    "read_ui_message_stream",
    "reduce_ui_message_stream",
    "to_ui_message_chunk",
    "to_ui_message_stream",
    "validate_ui_messages",
]

_EXPORTS = {
    "UI_MESSAGE_STREAM_HEADERS": "stepline.protocol.sse",
    "ChatRequest": "stepline.protocol.request",
    "LegacyMessage": "stepline.protocol.to_model_messages",
    "MessageMetadata": "stepline.protocol.metadata",
    "ReduceResult": "stepline.protocol.reducer",
    "TextStreamPart": "stepline.protocol.stream_parts",
    "TurnPlan": "stepline.protocol.request",
    "UIChunkMapper": "stepline.protocol.to_chunks",
    "UIMessage": "stepline.protocol.parts",
    "UIMessageChunk": "stepline.protocol.chunks",
    "UIMessagePart": "stepline.protocol.parts",
    "UIMessageReducer": "stepline.protocol.reducer",
    "UIMessageStreamWriter": "stepline.protocol.writer",
    "UIStreamOptions": "stepline.protocol.to_chunks",
    "convert_to_model_messages": "stepline.protocol.to_model_messages",
    "create_ui_message_stream": "stepline.protocol.writer",
    "decode_ui_message_stream": "stepline.protocol.sse",
    "encode_chunk": "stepline.protocol.sse",
    "encode_ui_message_stream": "stepline.protocol.sse",
    "parse_chat_request": "stepline.protocol.request",
    "parse_chunk": "stepline.protocol.chunks",
    "plan_turn": "stepline.protocol.request",
    "read_ui_message_stream": "stepline.protocol.reducer",
    "reduce_ui_message_stream": "stepline.protocol.reducer",
    "to_ui_message_chunk": "stepline.protocol.to_chunks",
    "to_ui_message_stream": "stepline.protocol.to_chunks",
    "validate_ui_messages": "stepline.protocol._ui_validation",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)
