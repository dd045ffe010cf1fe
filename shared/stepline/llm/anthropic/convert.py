"""ModelCallOptions → one Anthropic Messages request: body, headers and stream-start warnings.

After `getArgs` of `@ai-sdk/anthropic` (`src/anthropic-language-model.ts`) and `prepareTools`
(`src/anthropic-prepare-tools.ts`). The body is the exact JSON the API receives (without
`stream`); betas travel in one `anthropic-beta` header. Settings the API would refuse are
adjusted with a warning rather than sent: temperature outside 0..1, sampling settings while
thinking, a thinking budget under 1024 (the budget is added to `max_tokens`, so it always stays
below it, as the AI SDK does).

Pure: pydantic, the standard library and `stepline` only.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import JsonValue

from ..base import FunctionTool, ModelCallOptions, ModelCapabilities, ProviderTool, ResponseFormat
from .content import Block, PromptContext
from .options import (
    AnthropicProviderOptions,
    CustomSkill,
    ThinkingAdaptive,
    ThinkingDisabled,
    ThinkingEnabled,
    Warning,
    parse_anthropic_options,
    to_snake_wire,
)
from .prompt import convert_prompt
from .server_tools import server_tool_block
from .traits import ModelTraits, model_traits

__all__ = [
    "AnthropicRequest",
    "build_request",
]

MIN_THINKING_BUDGET = 1024
JSON_TOOL_NAME = "json"
_REASONING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}
_REASONING_EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}
_Thinking = ThinkingEnabled | ThinkingAdaptive | ThinkingDisabled


@dataclass(frozen=True, slots=True)
class AnthropicRequest:
    """One Messages request, ready to send.

    Attributes:
        body: The request JSON, `stream` aside.
        headers: Extra headers: the caller's, plus `anthropic-beta` when any beta is on.
        warnings: Stream-start warnings (settings dropped or adjusted, unknown option keys).
        uses_json_tool: Structured output goes through a `json` tool whose input is the answer.
    """

    body: dict[str, JsonValue]
    headers: dict[str, str]
    warnings: list[Warning]
    uses_json_tool: bool


def build_request(
    options: ModelCallOptions, *, model_id: str, capabilities: ModelCapabilities, default_max_tokens: int
) -> AnthropicRequest:
    """Convert one call. Raises `UnsupportedCapabilityError` (a file) or `ModelCallError` (bad options)."""
    provider, warnings = parse_anthropic_options(options.provider_options.get("anthropic"))
    warnings.extend(_unsupported_settings(options))
    traits = model_traits(model_id)
    context = PromptContext(model_id, capabilities, send_reasoning=provider.send_reasoning is not False)
    prompt = convert_prompt(options.prompt, context)
    body: dict[str, JsonValue] = {"model": model_id, "max_tokens": options.max_output_tokens or default_max_tokens}
    if prompt.system is not None:
        body["system"] = list[JsonValue](prompt.system) if isinstance(prompt.system, list) else prompt.system
    body["messages"] = list[JsonValue](prompt.messages)
    thinking, effort = _resolve_reasoning(options.reasoning, provider, traits, warnings)
    _sampling(
        body,
        options,
        thinking_on=isinstance(thinking, ThinkingEnabled | ThinkingAdaptive),
        traits=traits,
        warnings=warnings,
    )
    _thinking(body, thinking, warnings)
    json_tool = _response_format(body, options.response_format, provider, traits, warnings)
    _output_config(body, provider, effort)
    _tools(body, options, provider, json_tool, context, traits)
    _provider_fields(body, provider, context)
    headers = _headers(options.headers, [*context.betas, *(provider.anthropic_beta or [])])
    return AnthropicRequest(
        body=body, headers=headers, warnings=[*warnings, *context.warnings], uses_json_tool=json_tool is not None
    )


def _unsupported_settings(options: ModelCallOptions) -> list[Warning]:
    settings = {
        "presencePenalty": options.presence_penalty,
        "frequencyPenalty": options.frequency_penalty,
        "seed": options.seed,
    }
    return [{"type": "unsupported", "feature": name} for name, value in settings.items() if value is not None]


def _unsupported(feature: str, details: str) -> Warning:
    return {"type": "unsupported", "feature": feature, "details": details}


# --- reasoning and sampling -------------------------------------------------------------------


def _resolve_reasoning(
    reasoning: str | None, provider: AnthropicProviderOptions, traits: ModelTraits, warnings: list[Warning]
) -> tuple[_Thinking | None, str | None]:
    """Thinking and effort: provider options win; the portable `reasoning` level fills the gaps."""
    thinking, effort = provider.thinking, provider.effort
    if reasoning in (None, "provider-default") or effort is not None:
        return thinking, effort
    if reasoning == "none":
        return thinking or ThinkingDisabled.model_validate({"type": "disabled"}), effort
    if reasoning not in _REASONING_BUDGETS:
        warnings.append(_unsupported("reasoning", f"{reasoning!r} is not a reasoning level Anthropic understands"))
        return thinking, effort
    if traits.adaptive_thinking:
        thinking = thinking or ThinkingAdaptive.model_validate({"type": "adaptive", "display": "summarized"})
        return thinking, None if isinstance(thinking, ThinkingDisabled) else _REASONING_EFFORTS[reasoning]
    budget = _REASONING_BUDGETS[reasoning]
    return thinking or ThinkingEnabled.model_validate({"type": "enabled", "budgetTokens": budget}), effort


def _sampling(
    body: dict[str, JsonValue],
    options: ModelCallOptions,
    *,
    thinking_on: bool,
    traits: ModelTraits,
    warnings: list[Warning],
) -> None:
    settings: dict[str, float | int | None] = {
        "temperature": _clamped_temperature(options.temperature, warnings),
        "top_p": options.top_p,
        "top_k": options.top_k,
    }
    if thinking_on:
        for name in [name for name, value in settings.items() if value is not None]:
            warnings.append(_unsupported(name, f"{name} is not supported when thinking is on; it was not sent"))
            settings[name] = None
    elif traits.is_claude and settings["temperature"] is not None and settings["top_p"] is not None:
        warnings.append(_unsupported("topP", "topP is not supported when temperature is set; it was not sent"))
        settings["top_p"] = None
    body.update({name: value for name, value in settings.items() if value is not None})
    if options.stop_sequences:
        body["stop_sequences"] = list[JsonValue](options.stop_sequences)


def _clamped_temperature(temperature: float | None, warnings: list[Warning]) -> float | None:
    if temperature is None or 0 <= temperature <= 1:
        return temperature
    clamped = min(max(temperature, 0.0), 1.0)
    warnings.append(_unsupported("temperature", f"{temperature} is outside Anthropic's 0..1; {clamped} was sent"))
    return clamped


def _thinking(body: dict[str, JsonValue], thinking: _Thinking | None, warnings: list[Warning]) -> None:
    match thinking:
        case None:
            return
        case ThinkingDisabled():
            # Sent even though it is the usual default: some models think unless told not to.
            body["thinking"] = {"type": "disabled"}
        case ThinkingAdaptive():
            adaptive: Block = {"type": "adaptive"}
            if thinking.display is not None:
                adaptive["display"] = thinking.display
            body["thinking"] = adaptive
        case ThinkingEnabled():
            budget = thinking.budget_tokens
            if budget is None or budget < MIN_THINKING_BUDGET:
                detail = "not given" if budget is None else f"{budget} is under the minimum"
                warnings.append(
                    {
                        "type": "compatibility",
                        "feature": "extended thinking",
                        "details": f"thinking budget {detail}; {MIN_THINKING_BUDGET} tokens were used",
                    }
                )
                budget = MIN_THINKING_BUDGET
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            max_tokens = body["max_tokens"]
            # The budget comes out of max_tokens, which must stay above it: add it, as the AI SDK does.
            body["max_tokens"] = (max_tokens if isinstance(max_tokens, int) else 0) + budget


# --- structured output, tools ---------------------------------------------------------------


def _response_format(
    body: dict[str, JsonValue],
    response_format: ResponseFormat | None,
    provider: AnthropicProviderOptions,
    traits: ModelTraits,
    warnings: list[Warning],
) -> FunctionTool | None:
    """Native `output_config.format`, or (jsonTool mode, or auto on older models) a forced `json` tool."""
    if response_format is None or response_format.type != "json":
        return None
    if response_format.schema is None:
        warnings.append(_unsupported("responseFormat", "JSON output needs a schema on Anthropic; it was ignored"))
        return None
    mode = provider.structured_output_mode or "auto"
    if mode == "outputFormat" or (mode == "auto" and traits.structured_output):
        body["output_config"] = {"format": {"type": "json_schema", "schema": response_format.schema}}
        return None
    description = response_format.description or "Respond with a JSON object."
    return FunctionTool(name=JSON_TOOL_NAME, input_schema=response_format.schema, description=description)


def _output_config(body: dict[str, JsonValue], provider: AnthropicProviderOptions, effort: str | None) -> None:
    config = body.get("output_config")
    config = dict(config) if isinstance(config, dict) else {}
    if effort is not None:
        config["effort"] = effort
    if provider.task_budget is not None:
        config["task_budget"] = to_snake_wire(provider.task_budget)
    if config:
        body["output_config"] = config


def _tools(
    body: dict[str, JsonValue],
    options: ModelCallOptions,
    provider: AnthropicProviderOptions,
    json_tool: FunctionTool | None,
    context: PromptContext,
    traits: ModelTraits,
) -> None:
    """Function tools and server tools in the caller's order, then the forced JSON tool (if any)."""
    tools = [*options.tools, *([json_tool] if json_tool else [])]
    if not tools:
        return
    eager = provider.tool_streaming is not False
    entries: list[JsonValue] = []
    for tool in tools:
        if isinstance(tool, ProviderTool):
            entry, beta = server_tool_block(tool, model_id=context.model_id, supported=traits.server_tools)
            entries.append(entry)
            if beta is not None:
                context.add_beta(beta)
        else:
            entries.append(_function_tool(tool, eager=eager, context=context))
    body["tools"] = entries
    if json_tool is not None:
        if provider.disable_parallel_tool_use is False:
            context.warnings.append(
                _unsupported("providerOptions.anthropic.disableParallelToolUse", "the JSON tool needs one tool call")
            )
        body["tool_choice"] = {"type": "any", "disable_parallel_tool_use": True}
        return
    choice = _tool_choice(options.tool_choice, provider.disable_parallel_tool_use)
    if choice is not None:
        body["tool_choice"] = choice


def _function_tool(tool: FunctionTool, *, eager: bool, context: PromptContext) -> JsonValue:
    options = (tool.provider_options or {}).get("anthropic") or {}
    result: Block = {"name": tool.name}
    if tool.description is not None:
        result["description"] = tool.description
    result["input_schema"] = tool.input_schema
    cache_control = context.cache_control(tool.provider_options, f"tools.{tool.name}")
    if cache_control is not None:
        result["cache_control"] = cache_control
    eager_option = options.get("eagerInputStreaming")
    if eager_option is True or (eager and eager_option is None):
        result["eager_input_streaming"] = True
    if tool.strict is not None:
        result["strict"] = tool.strict
    if isinstance(options.get("deferLoading"), bool):
        result["defer_loading"] = options["deferLoading"]
    return result


def _tool_choice(choice: str | dict[str, str] | None, disable_parallel: bool | None) -> Block | None:
    parallel: Block = {"disable_parallel_tool_use": True} if disable_parallel else {}
    match choice:
        case None:
            return {"type": "auto", **parallel} if parallel else None
        case "auto":
            return {"type": "auto", **parallel}
        case "required":
            return {"type": "any", **parallel}
        case "none":
            return {"type": "none"}
        case {"type": "tool", "toolName": name}:
            return {"type": "tool", "name": name, **parallel}
        case _:
            raise ValueError(f"unknown tool choice {choice!r}")


# --- provider options that become request fields, and betas -----------------------------------


def _provider_fields(body: dict[str, JsonValue], provider: AnthropicProviderOptions, context: PromptContext) -> None:
    if provider.cache_control is not None:
        body["cache_control"] = to_snake_wire(provider.cache_control)
    if provider.metadata is not None and provider.metadata.user_id is not None:
        body["metadata"] = {"user_id": provider.metadata.user_id}
    if provider.speed is not None:
        body["speed"] = provider.speed
        if provider.speed == "fast":
            context.add_beta("fast-mode-2026-02-01")
    if provider.inference_geo is not None:
        body["inference_geo"] = provider.inference_geo
    if provider.mcp_servers:
        body["mcp_servers"] = to_snake_wire(provider.mcp_servers)
        context.add_beta("mcp-client-2025-04-04")
    if provider.container is not None:
        body["container"] = _container(provider, context)
    if provider.task_budget is not None:
        context.add_beta("task-budgets-2026-03-13")
    _fallbacks(body, provider, context)
    _context_management(body, provider, context)


def _container(provider: AnthropicProviderOptions, context: PromptContext) -> JsonValue:
    """A container id alone (programmatic tool calling), or an id with Agent Skills."""
    container = provider.container
    if container is None or not container.skills:
        return container.id if container is not None else None
    for beta in ("code-execution-2025-08-25", "skills-2025-10-02", "files-api-2025-04-14"):
        context.add_beta(beta)
    skills: list[JsonValue] = []
    for skill in container.skills:
        skill_id = skill.provider_reference.get("anthropic", "") if isinstance(skill, CustomSkill) else skill.skill_id
        entry: Block = {"type": skill.type, "skill_id": skill_id}
        if skill.version is not None:
            entry["version"] = skill.version
        skills.append(entry)
    result: Block = {"id": container.id} if container.id is not None else {}
    result["skills"] = skills
    return result


def _fallbacks(body: dict[str, JsonValue], provider: AnthropicProviderOptions, context: PromptContext) -> None:
    fallbacks = provider.fallbacks
    if fallbacks == "default":
        body["fallbacks"] = "default"
        context.add_beta("server-side-fallback-2026-07-01")
    elif fallbacks:
        body["fallbacks"] = to_snake_wire(fallbacks)
        context.add_beta("server-side-fallback-2026-06-01")


def _context_management(body: dict[str, JsonValue], provider: AnthropicProviderOptions, context: PromptContext) -> None:
    management = provider.context_management
    if management is None:
        return
    body["context_management"] = to_snake_wire(management)
    context.add_beta("context-management-2025-06-27")
    if any(edit.type == "compact_20260112" for edit in management.edits):
        context.add_beta("compact-2026-01-12")


def _headers(headers: dict[str, str], betas: list[str]) -> dict[str, str]:
    """The caller's headers, with every beta (theirs, the options', the request's) in one header."""
    result = {name: value for name, value in headers.items() if name.lower() != "anthropic-beta"}
    given = [value for name, value in headers.items() if name.lower() == "anthropic-beta"]
    merged: list[str] = []
    for beta in [*betas, *(part.strip() for value in given for part in value.split(","))]:
        if beta and beta not in merged:
            merged.append(beta)
    if merged:
        result["anthropic-beta"] = ",".join(merged)
    return result
