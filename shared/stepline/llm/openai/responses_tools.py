"""The `tools` and `tool_choice` of a Responses request, function tools and OpenAI's own (pure).

Mirrors `prepareResponsesTools` of `@ai-sdk/openai` 4.0.118
(`src/responses/openai-responses-prepare-tools.ts`) for function tools and the four built-in tools
Stepline offers (`stepline.llm.openai.tools`). A provider tool's `args` are the SDK's (camelCase);
each becomes the API's tool object:

    openai.web_search         {"type": "web_search", filters.allowed_domains/blocked_domains,
                               external_web_access, search_context_size, user_location}
    openai.file_search        {"type": "file_search", vector_store_ids, max_num_results,
                               ranking_options {ranker, score_threshold}, filters}
    openai.code_interpreter   {"type": "code_interpreter", container: id | {"type": "auto", file_ids,
                               memory_limit, network_policy}}
    openai.image_generation   {"type": "image_generation", action, background, input_fidelity,
                               input_image_mask, model, moderation, output_compression,
                               output_format, partial_images, quality, size}

A `{"type": "tool", "toolName": name}` choice naming a provider tool becomes `{"type": <its type>}`,
an `allowedTools` entry `{"type": <its type>}`. A provider tool of another provider, or an OpenAI
tool this module does not know, raises `UnsupportedCapabilityError` before any request.

`ToolNames` maps the API's names (`web_search`) to the names the agent gave its tools, and back:
the stream and the input conversion speak the agent's names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from ..base import FunctionTool, ProviderTool, ToolChoice, ToolDefinition
from ..errors import UnsupportedCapabilityError
from .options import AllowedTools, CallWarning, unsupported_warning

__all__ = ["PROVIDER_TOOL_TYPES", "ToolNames", "prepare_responses_tools"]

Body = dict[str, Any]

PROVIDER_TOOL_TYPES: dict[str, str] = {
    "openai.web_search": "web_search",
    "openai.file_search": "file_search",
    "openai.code_interpreter": "code_interpreter",
    "openai.image_generation": "image_generation",
}
"""Provider tool id -> the API's tool type (also the name its calls stream under)."""


@dataclass(frozen=True, slots=True)
class ToolNames:
    """The agent's name for each OpenAI tool type in a call (`createToolNameMapping`)."""

    custom: dict[str, str] = field(default_factory=dict[str, str])
    """API tool type (`web_search`) -> the agent's tool name."""

    @classmethod
    def of(cls, tools: Sequence[ToolDefinition]) -> ToolNames:
        return cls(
            {
                PROVIDER_TOOL_TYPES[tool.id]: tool.name
                for tool in tools
                if isinstance(tool, ProviderTool) and tool.id in PROVIDER_TOOL_TYPES
            }
        )

    def to_custom(self, api_name: str) -> str:
        """The agent's name for the API's `api_name` (itself when no provider tool has that type)."""
        return self.custom.get(api_name, api_name)

    def to_provider(self, name: str) -> str:
        """The API's tool type for the agent's tool `name` (itself for a function tool)."""
        return next((api for api, custom in self.custom.items() if custom == name), name)

    def has(self, api_name: str) -> bool:
        return api_name in self.custom


def prepare_responses_tools(
    tools: Sequence[ToolDefinition],
    tool_choice: ToolChoice | None,
    allowed: AllowedTools | None,
    warnings: list[CallWarning],
    *,
    provider: str,
    model_id: str,
) -> Body:
    """`tools` and `tool_choice` for the request body (empty when the call has no tools)."""
    if not tools:
        return {}
    entries = [_tool(tool, provider=provider, model_id=model_id) for tool in tools]
    names = ToolNames.of(tools)
    if allowed is not None:
        return {"tools": entries, "tool_choice": _allowed_tools(allowed, tools, names, warnings)}
    return {"tools": entries, "tool_choice": _tool_choice(tool_choice, names)}


def _tool(tool: ToolDefinition, *, provider: str, model_id: str) -> Body:
    if isinstance(tool, FunctionTool):
        return _function_tool(tool)
    build = _BUILDERS.get(tool.id)
    if build is None:
        raise UnsupportedCapabilityError(
            f"the provider tool {tool.id} ({tool.name}) is not supported by the OpenAI Responses API for {model_id}",
            provider=provider,
            model_id=model_id,
        )
    return _without_none(build(tool.args))


def _function_tool(tool: FunctionTool) -> Body:
    item: Body = {"type": "function", "name": tool.name}
    if tool.description is not None:
        item["description"] = tool.description
    item["parameters"] = tool.input_schema
    if tool.strict is not None:
        item["strict"] = tool.strict
    return item


def _web_search(args: dict[str, JsonValue]) -> Body:
    filters = _object(args.get("filters"))
    return {
        "type": "web_search",
        "filters": None
        if filters is None
        else _without_none(
            {"allowed_domains": filters.get("allowedDomains"), "blocked_domains": filters.get("blockedDomains")}
        ),
        "external_web_access": args.get("externalWebAccess"),
        "search_context_size": args.get("searchContextSize"),
        "user_location": args.get("userLocation"),
    }


def _file_search(args: dict[str, JsonValue]) -> Body:
    ranking = _object(args.get("ranking"))
    return {
        "type": "file_search",
        "vector_store_ids": args.get("vectorStoreIds"),
        "max_num_results": args.get("maxNumResults"),
        "ranking_options": None
        if ranking is None
        else _without_none({"ranker": ranking.get("ranker"), "score_threshold": ranking.get("scoreThreshold")}),
        "filters": args.get("filters"),
    }


def _code_interpreter(args: dict[str, JsonValue]) -> Body:
    container = args.get("container")
    if isinstance(container, str):
        return {"type": "code_interpreter", "container": container}
    settings = _object(container) or {}
    policy = _object(settings.get("networkPolicy"))
    network: Body | None = None
    if policy is not None:
        network = (
            {"type": "disabled"}
            if policy.get("type") == "disabled"
            else _without_none(
                {
                    "type": "allowlist",
                    "allowed_domains": policy.get("allowedDomains"),
                    "domain_secrets": policy.get("domainSecrets"),
                }
            )
        )
    auto = {
        "type": "auto",
        "file_ids": settings.get("fileIds"),
        "memory_limit": settings.get("memoryLimit"),
        "network_policy": network,
    }
    return {"type": "code_interpreter", "container": _without_none(auto)}


def _image_generation(args: dict[str, JsonValue]) -> Body:
    mask = _object(args.get("inputImageMask"))
    return {
        "type": "image_generation",
        "action": args.get("action"),
        "background": args.get("background"),
        "input_fidelity": args.get("inputFidelity"),
        "input_image_mask": None
        if mask is None
        else _without_none({"file_id": mask.get("fileId"), "image_url": mask.get("imageUrl")}),
        "model": args.get("model"),
        "moderation": args.get("moderation"),
        "partial_images": args.get("partialImages"),
        "quality": args.get("quality"),
        "output_compression": args.get("outputCompression"),
        "output_format": args.get("outputFormat"),
        "size": args.get("size"),
    }


_BUILDERS: dict[str, Callable[[dict[str, JsonValue]], Body]] = {
    "openai.web_search": _web_search,
    "openai.file_search": _file_search,
    "openai.code_interpreter": _code_interpreter,
    "openai.image_generation": _image_generation,
}


def _tool_choice(tool_choice: ToolChoice | None, names: ToolNames) -> str | Body | None:
    if tool_choice is None or isinstance(tool_choice, str):
        return tool_choice
    name = names.to_provider(tool_choice["toolName"])
    return {"type": name} if names.has(name) else {"type": "function", "name": name}


def _allowed_tools(
    allowed: AllowedTools, tools: Sequence[ToolDefinition], names: ToolNames, warnings: list[CallWarning]
) -> Body:
    known = {tool.name for tool in tools}
    entries: list[Body] = []
    for name in allowed.tool_names:
        api_name = names.to_provider(name)
        if names.has(api_name):
            entries.append({"type": api_name})
            continue
        if name not in known:
            details = "the tool is not part of the tools for this request and is sent as a function tool"
            warnings.append(unsupported_warning(f'allowedTools entry "{name}"', details))
        entries.append({"type": "function", "name": name})
    return {"type": "allowed_tools", "mode": allowed.mode or "auto", "tools": entries}


def _object(value: JsonValue) -> dict[str, JsonValue] | None:
    return value if isinstance(value, dict) else None


def _without_none(body: Body) -> Body:
    return {key: value for key, value in body.items() if value is not None}
