"""What a step keeps for the run inspector that its state does not: the request as sent, the answer, timings."""

from __future__ import annotations

from typing import Any

from .call_parts import ModelCallResult
from .config import LoopConfig
from .request_view import response_view

__all__ = ["step_inspection"]


def step_inspection(config: LoopConfig, result: ModelCallResult, started: int) -> dict[str, Any] | None:
    """What the inspector shows of a step that the state does not keep (with `LoopConfig.inspect`)."""
    if not config.inspect:
        return None
    response = response_view(
        texts=[v[0] for k, v in result.content if k == "text"],
        reasoning=[v[0] for k, v in result.content if k == "reasoning"],
        tool_calls=[
            {"toolCallId": c.tool_call_id, "toolName": c.tool_name, "input": c.input, "invalid": bool(c.invalid)}
            for c in result.tool_calls
        ],
        finish_reason=result.finish_reason,
        usage=result.usage.to_metadata() or {},
        response_id=result.response_id,
        model_id=result.model_id,
    )
    return {
        "request": result.request,
        "response": response,
        "attempts": result.attempts,
        "startedAt": started,
        "endedAt": config.clock(),
    }
