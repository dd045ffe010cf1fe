"""Scripted model output for the loop benchmarks, identical to bench/loop_workloads.mjs."""

from __future__ import annotations

from typing import Any

Part = dict[str, Any]


def _finish(reason: str) -> Part:
    return {
        "type": "finish",
        "finishReason": {"unified": reason, "raw": reason},
        "usage": {"inputTokens": {"total": 10}, "outputTokens": {"total": 5}},
    }


def steps_script(n: int) -> list[list[Part]]:
    steps = [
        [{"type": "tool-call", "toolCallId": f"c{i}", "toolName": "noop", "input": "{}"}, _finish("tool-calls")]
        for i in range(n)
    ]
    done = [
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "done"},
        {"type": "text-end", "id": "t"},
    ]
    return [*steps, [*done, _finish("stop")]]


def chunks_script(n: int) -> list[list[Part]]:
    deltas = [{"type": "text-delta", "id": "t", "delta": f"tok{i % 97} "} for i in range(n)]
    return [[{"type": "text-start", "id": "t"}, *deltas, {"type": "text-end", "id": "t"}, _finish("stop")]]
