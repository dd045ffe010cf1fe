"""The keyword arguments of one step's `LoopConfig` (and of `stream_text`) from an agent definition."""

from __future__ import annotations

from typing import Any

from ..loop.config import CallSettings
from ..loop.limits import Limits
from ..loop.price_list import DEFAULT_PRICES
from ..loop.prices import PriceTable
from ..loop.stop import is_step_count

__all__ = ["options_for"]


async def options_for(agent: Any, *, model: Any, context: Any, max_steps: int, **host: Any) -> dict[str, Any]:
    """`Agent.loop_options`: the agent's settings, the run context's instructions and the host's fields."""
    base: PriceTable = host.pop("prices", None) or DEFAULT_PRICES
    deployment: Limits | None = host.pop("limits", None)
    settings = CallSettings(
        max_output_tokens=agent.max_output_tokens,
        temperature=agent.temperature,
        top_p=agent.top_p,
        top_k=agent.top_k,
        presence_penalty=agent.presence_penalty,
        frequency_penalty=agent.frequency_penalty,
        stop_sequences=list(agent.stop_sequences) if agent.stop_sequences is not None else None,
        seed=agent.seed,
        reasoning=agent.reasoning,
    )
    options: dict[str, Any] = {
        "model": model,
        "instructions": await agent.instructions_for(context),
        "tools": list(agent.tools),
        "tool_choice": agent.tool_choice,
        "active_tools": list(agent.active_tools) if agent.active_tools is not None else None,
        "tool_order": list(agent.tool_order) if agent.tool_order is not None else None,
        "tool_approval": agent.tool_approval,
        "repair_tool_call": agent.repair_tool_call,
        "stop_when": agent.stop_when if agent.stop_when is not None else is_step_count(max_steps),
        "prepare_step": agent.prepare_step,
        "settings": settings,
        "max_retries": agent.max_retries,
        "timeouts": agent.timeouts,
        "headers": dict(agent.headers),
        "provider_options": dict(agent.provider_options),
        "runtime_context": context,
        "output": agent.output,
        "output_schema": agent.output_schema,
        "include": agent.include,
        "callbacks": agent.callbacks(),
        "tracer": agent.tracer,
        "meter": agent.meter,
        "trace_content": agent.trace_content,
        "agent_name": agent.name,
        "prices": base.merged(agent.prices),
        "limits": agent.limits.over(deployment) if agent.limits is not None else deployment,
        **host,
    }
    return options
