"""The Vercel AI SDK v7 UI Message Stream protocol (pure: the standard library and pydantic only).

Mirrors `ai@7.0.173`; docs/protocol.md lists where it differs from 7.0.77 and where Stepline adds to it.
The main entry points are re-exported here; the wire types live in their modules
(`chunks`, `parts`, `stream_parts`, `model_messages`, `metadata`).
"""

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
