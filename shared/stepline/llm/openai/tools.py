"""OpenAI's built-in tools for an agent: web search, file search, code interpreter, image generation.

Each factory returns a loop `Tool` that carries a `ProviderTool` (the AI SDK's
`openai.tools.webSearch(...)` and friends, options in snake_case): OpenAI runs the tool inside the
model call, Stepline never executes or claims its calls, and the stream reports each call and its
result as provider-executed tool parts. Only the Responses API has these tools; Chat Completions
(and any other provider's model) refuse them with `UnsupportedCapabilityError` before any request.

Example:
    ```python
    from stepline.llm.openai import tools as openai_tools

    agent = Agent(
        model="openai:gpt-5-mini",
        tools=[
            openai_tools.web_search(
                allowed_domains=["docs.python.org"],
                user_location=openai_tools.UserLocation(country="GB", city="London"),
                search_context_size="low",
            ),
            openai_tools.code_interpreter(),
        ],
    )
    ```

The `args` kept on the `ProviderTool` are the SDK's (camelCase), so a tool definition reads the
same in a Stepline record as in an AI SDK request; `responses_tools` turns them into the API's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from ...loop.tools import Tool
from ..base import ProviderTool

__all__ = [
    "CodeInterpreterContainer",
    "UserLocation",
    "code_interpreter",
    "file_search",
    "image_generation",
    "web_search",
]

Args = dict[str, JsonValue]


@dataclass(frozen=True, slots=True, kw_only=True)
class UserLocation:
    """An approximate user location for web search (ISO country code, free-text city and region)."""

    country: str | None = None
    city: str | None = None
    region: str | None = None
    timezone: str | None = None
    """An IANA time zone, e.g. `"Europe/London"`."""

    def to_args(self) -> Args:
        fields: Args = {"type": "approximate"}
        for key in ("country", "city", "region", "timezone"):
            value = getattr(self, key)
            if value is not None:
                fields[key] = value
        return fields


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeInterpreterContainer:
    """A new container for the code interpreter: uploaded files, memory, network access."""

    file_ids: Sequence[str] | None = None
    memory_limit: Literal["1g", "4g", "16g", "64g"] | None = None
    allowed_domains: Sequence[str] | None = None
    """Let the code reach these domains (an allowlist network policy); None leaves OpenAI's default."""
    network_disabled: bool = False
    """No network at all (a `disabled` network policy)."""

    def to_args(self) -> Args:
        if self.network_disabled and self.allowed_domains is not None:
            raise ValueError("a code interpreter container cannot both disable the network and allow domains")
        fields: Args = {}
        if self.file_ids is not None:
            fields["fileIds"] = list(self.file_ids)
        if self.memory_limit is not None:
            fields["memoryLimit"] = self.memory_limit
        if self.network_disabled:
            fields["networkPolicy"] = {"type": "disabled"}
        elif self.allowed_domains is not None:
            fields["networkPolicy"] = {"type": "allowlist", "allowedDomains": list(self.allowed_domains)}
        return fields


def _tool(provider_id: str, name: str, args: Args) -> Tool:
    return Tool(name=name, provider=ProviderTool(id=provider_id, name=name, args=args))


def _set(args: Args, key: str, value: JsonValue) -> None:
    if value is not None:
        args[key] = value


def web_search(
    *,
    name: str = "web_search",
    allowed_domains: Sequence[str] | None = None,
    blocked_domains: Sequence[str] | None = None,
    user_location: UserLocation | None = None,
    search_context_size: Literal["low", "medium", "high"] | None = None,
    external_web_access: bool | None = None,
) -> Tool:
    """OpenAI's web search (`openai.tools.webSearch`).

    Args:
        name: The tool's name in the conversation (its parts are `tool-<name>`).
        allowed_domains: Search only these domains and their subdomains (no scheme, at most 100).
        blocked_domains: Never search these domains.
        user_location: Where results should be relevant for.
        search_context_size: How much of the pages the model reads: cost and latency against depth.
        external_web_access: False to use cached and indexed results only, not live pages.
    """
    args: Args = {}
    if allowed_domains is not None or blocked_domains is not None:
        filters: Args = {}
        _set(filters, "allowedDomains", None if allowed_domains is None else list(allowed_domains))
        _set(filters, "blockedDomains", None if blocked_domains is None else list(blocked_domains))
        args["filters"] = filters
    _set(args, "externalWebAccess", external_web_access)
    _set(args, "searchContextSize", search_context_size)
    _set(args, "userLocation", None if user_location is None else user_location.to_args())
    return _tool("openai.web_search", name, args)


def file_search(
    vector_store_ids: Sequence[str],
    *,
    name: str = "file_search",
    max_num_results: int | None = None,
    ranker: str | None = None,
    score_threshold: float | None = None,
    filters: dict[str, JsonValue] | None = None,
) -> Tool:
    """OpenAI's file search over vector stores (`openai.tools.fileSearch`).

    Args:
        vector_store_ids: The vector stores to search.
        name: The tool's name in the conversation.
        max_num_results: At most this many results (OpenAI's default is 10).
        ranker: The ranker to use (`"auto"`, `"default-2024-11-15"`).
        score_threshold: Keep results scoring at least this (0 to 1).
        filters: An attribute filter, in OpenAI's shape: `{"key", "type": "eq"|…, "value"}` or
            `{"type": "and"|"or", "filters": [...]}`.
    """
    if not vector_store_ids:
        raise ValueError("file_search needs at least one vector store id")
    args: Args = {"vectorStoreIds": list(vector_store_ids)}
    _set(args, "maxNumResults", max_num_results)
    if ranker is not None or score_threshold is not None:
        ranking: Args = {}
        _set(ranking, "ranker", ranker)
        _set(ranking, "scoreThreshold", score_threshold)
        args["ranking"] = ranking
    _set(args, "filters", filters)
    return _tool("openai.file_search", name, args)


def code_interpreter(
    *, name: str = "code_interpreter", container: str | CodeInterpreterContainer | None = None
) -> Tool:
    """OpenAI's code interpreter (`openai.tools.codeInterpreter`): Python in a sandboxed container.

    Args:
        name: The tool's name in the conversation.
        container: An existing container's id, or the settings of a new one (a fresh automatic
            container when None).
    """
    args: Args = {}
    if isinstance(container, str):
        args["container"] = container
    elif container is not None:
        args["container"] = container.to_args()
    return _tool("openai.code_interpreter", name, args)


def image_generation(
    *,
    name: str = "image_generation",
    size: str | None = None,
    quality: Literal["auto", "low", "medium", "high", "xhigh", "max"] | None = None,
    output_format: Literal["png", "jpeg", "webp"] | None = None,
    output_compression: int | None = None,
    background: Literal["auto", "opaque", "transparent"] | None = None,
    partial_images: int | None = None,
    moderation: Literal["auto", "low"] | None = None,
    model: str | None = None,
    action: Literal["generate", "edit", "auto"] | None = None,
    input_fidelity: Literal["low", "high"] | None = None,
) -> Tool:
    """OpenAI's image generation (`openai.tools.imageGeneration`).

    Args:
        name: The tool's name in the conversation.
        size: `"1024x1024"`, `"1024x1536"`, `"1536x1024"`, `"auto"` (or `WxH` on GPT Image 2).
        quality: Rendering quality.
        output_format: The image's format (PNG by default).
        output_compression: 0 to 100, for JPEG and WebP.
        background: A transparent background needs PNG or WebP.
        partial_images: 0 to 3 previews streamed while the image renders.
        moderation: Content moderation level.
        model: The image model (`gpt-image-1` by default).
        action: Generate a new image, edit one from the conversation, or let the model decide.
        input_fidelity: How closely an edit keeps the input image.
    """
    if output_compression is not None and not 0 <= output_compression <= 100:
        raise ValueError("output_compression must be between 0 and 100")
    if partial_images is not None and not 0 <= partial_images <= 3:
        raise ValueError("partial_images must be between 0 and 3")
    args: Args = {}
    for key, value in (
        ("action", action),
        ("background", background),
        ("inputFidelity", input_fidelity),
        ("model", model),
        ("moderation", moderation),
        ("outputCompression", output_compression),
        ("outputFormat", output_format),
        ("partialImages", partial_images),
        ("quality", quality),
        ("size", size),
    ):
        _set(args, key, value)
    return _tool("openai.image_generation", name, args)
