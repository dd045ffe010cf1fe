"""Stepline's exceptions.

    StepLineError
    ├── ProtocolError                 input that breaks the UI Message Stream protocol
    │   ├── UIMessageStreamError      a chunk that does not fit the message being built
    │   ├── InvalidUIMessageError     a UIMessage or chat request that fails validation (HTTP 400)
    │   └── MessageConversionError    a UIMessage that cannot become a model message
    └── (later issues add the loop, store and AWS errors here)

Every message names what was wrong and where (a chunk type and id, or a JSON path), and never
echoes secrets: validation errors quote field paths and reasons, not the offending values.
"""

from __future__ import annotations

__all__ = ["InvalidUIMessageError", "MessageConversionError", "ProtocolError", "StepLineError", "UIMessageStreamError"]


class StepLineError(Exception):
    """Base of every error Stepline raises on purpose."""


class ProtocolError(StepLineError):
    """Input that breaks the UI Message Stream protocol."""


class UIMessageStreamError(ProtocolError):
    """A chunk that does not fit the message being built (the SDK's `AI_UIMessageStreamError`).

    Attributes:
        chunk_type: The chunk type that failed (`"tool-invocation"` for an output or approval
            request naming an unknown tool call, as in the SDK).
        chunk_id: The part id, tool call id or approval id the chunk named.
    """

    def __init__(self, *, chunk_type: str, chunk_id: str, message: str) -> None:
        super().__init__(message)
        self.chunk_type = chunk_type
        self.chunk_id = chunk_id


class InvalidUIMessageError(ProtocolError):
    """A UIMessage, message list or chat request that fails validation.

    Attributes:
        issues: One `(path, reason)` pair per problem, for example `("messages[0].parts[1].text", "Field required")`.
    """

    def __init__(self, issues: list[tuple[str, str]]) -> None:
        self.issues = issues
        super().__init__("; ".join(f"{path}: {reason}" if path else reason for path, reason in issues))


class MessageConversionError(ProtocolError):
    """A UIMessage that cannot be converted to a model message (the SDK's `AI_MessageConversionError`)."""
