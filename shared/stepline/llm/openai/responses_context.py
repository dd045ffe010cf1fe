"""What the Responses input conversion needs to know besides the messages (`ResponsesInputContext`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .options import SystemMessageMode
from .prompt import FileTarget
from .responses_tools import ToolNames

__all__ = ["ResponsesInputContext"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponsesInputContext:
    """What the input conversion needs to know besides the messages."""

    target: FileTarget
    system_message_mode: SystemMessageMode
    pass_through_unsupported_files: bool = False
    has_conversation: bool = False
    """Items with an OpenAI item id already live in the conversation: skip them."""
    has_previous_response_id: bool = False
    """Reasoning items with an id already live in the previous response chain: skip them."""
    store: bool = True
    """OpenAI keeps the response (`store` is not false): its output items can be referenced by id."""
    tool_names: ToolNames = field(default_factory=ToolNames)
    """The agent's names for OpenAI's built-in tools (to recognise their calls and results)."""

    @property
    def provider(self) -> str:
        return self.target.provider
