"""What an Anthropic model id supports, from its family and version (unknown Claude ids: the newest)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..base import ModelCapabilities
from .content import IMAGE_TYPES

__all__ = ["ModelTraits", "anthropic_capabilities", "model_traits"]

_FAMILY_FIRST = re.compile(r"claude-[a-z]+-(\d+)(?:-(\d{1,2})(?!\d))?")
_VERSION_FIRST = re.compile(r"claude-(\d+)(?:-(\d{1,2}))?-[a-z]+")


@dataclass(frozen=True, slots=True)
class ModelTraits:
    """What a model id supports, from its family and version (unknown Claude ids: the newest)."""

    documents: bool
    structured_output: bool
    adaptive_thinking: bool
    is_claude: bool
    server_tools: bool = True
    """Web search, web fetch and code execution: Claude 3.5 Haiku, 3.7 Sonnet and every later model."""


def model_traits(model_id: str) -> ModelTraits:
    """Traits from a model id such as `claude-sonnet-4-6`, `claude-3-5-haiku-latest` or a Bedrock id."""
    match = _FAMILY_FIRST.search(model_id) or _VERSION_FIRST.search(model_id)
    if match is None:
        is_claude = "claude" in model_id
        return ModelTraits(
            documents=is_claude,
            structured_output=is_claude,
            adaptive_thinking=is_claude,
            is_claude=is_claude,
            server_tools=is_claude,
        )
    version = (int(match.group(1)), int(match.group(2) or 0))
    return ModelTraits(
        documents=version >= (3, 5),
        structured_output=version >= (4, 5) or version == (4, 1),
        adaptive_thinking=version >= (4, 6),
        is_claude=True,
        server_tools=version >= (3, 7) or (version == (3, 5) and "haiku" in model_id),
    )


def anthropic_capabilities(model_id: str) -> ModelCapabilities:
    """Images for every model; PDFs and plain-text documents from Claude 3.5 on."""
    documents = ("application/pdf", "text/plain") if model_traits(model_id).documents else ()
    return ModelCapabilities(input_media_types=(*IMAGE_TYPES, *documents), reasoning_history=True)
