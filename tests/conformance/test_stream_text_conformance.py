"""The loop's UI chunk sequence equals `ai@7.0.173` streamText's for the same scripted model output.

Both sides play the same LanguageModelV4 stream parts (the SDK through `MockLanguageModelV4`),
declare the same tools as data, and map parts to UI chunks with default options. Approval ids are
generated on each side, so they are renamed in order of appearance before comparing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from stepline.llm.scripted import ScriptedModel
from stepline.loop.config import AbortSignal
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import stream_text
from stepline.loop.tools import Tool
from tests.support.sdk_oracle import SdkOracle

Json = dict[str, Any]


def finish(reason: str = "stop", raw: str | None = None) -> Json:
    return {
        "type": "finish",
        "finishReason": {"unified": reason, "raw": raw or reason},
        "usage": {"inputTokens": {"total": 10, "noCache": 10}, "outputTokens": {"total": 5, "text": 5}},
    }


def text(id_: str, *deltas: str) -> list[Json]:
    return [
        {"type": "text-start", "id": id_},
        *({"type": "text-delta", "id": id_, "delta": d} for d in deltas),
        {"type": "text-end", "id": id_},
    ]


def reasoning(id_: str, *deltas: str) -> list[Json]:
    return [
        {"type": "reasoning-start", "id": id_},
        *({"type": "reasoning-delta", "id": id_, "delta": d} for d in deltas),
        {"type": "reasoning-end", "id": id_, "providerMetadata": {"anthropic": {"signature": "sig"}}},
    ]


def call(call_id: str, name: str, input_text: str, *, stream: bool = True) -> list[Json]:
    streamed: list[Json] = [
        {"type": "tool-input-start", "id": call_id, "toolName": name},
        {"type": "tool-input-delta", "id": call_id, "delta": input_text},
        {"type": "tool-input-end", "id": call_id},
    ]
    return [
        *(streamed if stream else []),
        {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": input_text},
    ]


WEATHER = {
    "kind": "returns",
    "value": {"city": "Paris", "temperature": 18},
    "schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
DELETE = {"kind": "returns", "value": {"deleted": True}}
APPROVAL_HISTORY: list[Json] = [
    {"role": "user", "content": [{"type": "text", "text": "delete /tmp/x"}]},
    {
        "role": "assistant",
        "content": [
            {"type": "tool-call", "toolCallId": "call-1", "toolName": "deleteFile", "input": {"path": "/tmp/x"}},
            {"type": "tool-approval-request", "approvalId": "approval-1", "toolCallId": "call-1"},
        ],
    },
]


def decided(approved: bool, reason: str | None = None) -> list[Json]:
    response: Json = {"type": "tool-approval-response", "approvalId": "approval-1", "approved": approved}
    if reason is not None:
        response["reason"] = reason
    return [*APPROVAL_HISTORY, {"role": "tool", "content": [response]}]


SCENARIOS: list[tuple[str, Json]] = [
    ("plain text", {"prompt": "Hi", "script": [[*text("t1", "Hello", " world"), finish()]]}),
    (
        "reasoning then text",
        {"prompt": "Why?", "script": [[*reasoning("r1", "Let me ", "think"), *text("t1", "Because."), finish()]]},
    ),
    (
        "tool call then text",
        {
            "prompt": "Weather?",
            "tools": {"weather": WEATHER},
            "stopSteps": 3,
            "script": [
                [*call("c1", "weather", '{"city":"Paris"}'), finish("tool-calls")],
                [*text("t1", "18 degrees."), finish()],
            ],
        },
    ),
    (
        "two parallel tool calls without input streaming",
        {
            "prompt": "Weather twice?",
            "tools": {"weather": WEATHER},
            "stopSteps": 2,
            "script": [
                [
                    *call("c1", "weather", '{"city":"Paris"}', stream=False),
                    *call("c2", "weather", '{"city":"Rome"}', stream=False),
                    finish("tool-calls"),
                ],
                [*text("t1", "Both mild."), finish()],
            ],
        },
    ),
    (
        "approval request pauses the run",
        {
            "prompt": "delete /tmp/x",
            "tools": {"deleteFile": DELETE},
            "toolApproval": {"deleteFile": "user-approval"},
            "stopSteps": 3,
            "script": [[*call("c1", "deleteFile", '{"path":"/tmp/x"}'), finish("tool-calls")]],
        },
    ),
    (
        "automatic approval runs the tool",
        {
            "prompt": "delete /tmp/x",
            "tools": {"deleteFile": DELETE},
            "toolApproval": {"deleteFile": "approved"},
            "stopSteps": 2,
            "script": [
                [*call("c1", "deleteFile", '{"path":"/tmp/x"}'), finish("tool-calls")],
                [*text("t", "Deleted."), finish()],
            ],
        },
    ),
    (
        "automatic denial with a reason",
        {
            "prompt": "delete /",
            "tools": {"deleteFile": DELETE},
            "toolApproval": {"deleteFile": {"type": "denied", "reason": "too dangerous"}},
            "stopSteps": 2,
            "script": [
                [*call("c1", "deleteFile", '{"path":"/"}'), finish("tool-calls")],
                [*text("t", "I may not."), finish()],
            ],
        },
    ),
    (
        "approved continuation executes the tool then continues",
        {
            "messages": decided(True),
            "tools": {"deleteFile": DELETE},
            "stopSteps": 2,
            "script": [[*text("t", "Deleted it."), finish()]],
        },
    ),
    (
        "denied continuation sends output-denied then continues",
        {
            "messages": decided(False, "not now"),
            "tools": {"deleteFile": DELETE},
            "stopSteps": 2,
            "script": [[*text("t", "Left it."), finish()]],
        },
    ),
    (
        "tool that throws",
        {
            "prompt": "Weather?",
            "tools": {"weather": {"kind": "throws", "message": "Weather API down"}},
            "stopSteps": 2,
            "script": [
                [*call("c1", "weather", '{"city":"Paris"}'), finish("tool-calls")],
                [*text("t", "The service failed."), finish()],
            ],
        },
    ),
    (
        "unknown tool",
        {
            "prompt": "Weather?",
            "tools": {"weather": WEATHER},
            "stopSteps": 2,
            "script": [
                [*call("c1", "forecast", '{"city":"Paris"}', stream=False), finish("tool-calls")],
                [*text("t", "Sorry."), finish()],
            ],
        },
    ),
    (
        "model error mid-stream",
        {
            "prompt": "Hi",
            "script": [
                [*text("t1", "Partial"), {"type": "error", "error": {"message": "overloaded"}}, finish("error")]
            ],
        },
    ),
    (
        "abort during a tool",
        {
            "prompt": "Run it",
            "tools": {"slow": {"kind": "aborts"}},
            "stopSteps": 2,
            "script": [[*text("t", "Starting."), *call("c1", "slow", "{}"), finish("tool-calls")]],
        },
    ),
]


def python_tool(name: str, spec: Json, abort: AbortSignal) -> Tool:
    async def returns(_: Any) -> Any:
        return spec["value"]

    async def throws(_: Any) -> Any:
        raise _JsError(spec["message"])

    async def aborts(_: Any) -> Any:
        abort.abort()
        await asyncio.Event().wait()

    execute = {"returns": returns, "throws": throws, "aborts": aborts}[spec["kind"]]
    return Tool(name=name, input_schema=spec.get("schema", {"type": "object"}), execute=execute)


class _JsError(Exception):
    name = "Error"


def approval_setting(value: Any) -> Any:
    return (value["type"], value.get("reason")) if isinstance(value, dict) else value


async def run_stepline(scenario: Json) -> list[Json]:
    abort = AbortSignal()
    model = ScriptedModel.from_script(scenario["script"])
    source = {"prompt": scenario["prompt"]} if "prompt" in scenario else {"messages": scenario["messages"]}
    approvals = scenario.get("toolApproval")
    result = stream_text(
        model=model,
        **source,
        tools=[python_tool(n, s, abort) for n, s in scenario.get("tools", {}).items()],
        tool_approval={k: approval_setting(v) for k, v in approvals.items()} if approvals else None,
        stop_when=is_step_count(scenario.get("stopSteps", 1)),
        abort=abort,
        message_id="msg-1",
    )
    chunks = [chunk.to_wire() async for chunk in result.ui_message_stream()]
    model.assert_consumed()
    return chunks


def normalise(chunks: list[Json]) -> list[Json]:
    names: dict[str, str] = {}
    out = []
    for chunk in chunks:
        if "approvalId" in chunk:
            chunk = {**chunk, "approvalId": names.setdefault(chunk["approvalId"], f"approval-{len(names) + 1}")}
        out.append(chunk)
    return out


@pytest.mark.parametrize("scenario", [s for _, s in SCENARIOS], ids=[n for n, _ in SCENARIOS])
def test_ui_chunks_match_sdk_stream_text(sdk: SdkOracle, scenario: Json) -> None:
    expected = sdk.call("runStreamText", **scenario)
    ours = asyncio.run(run_stepline(scenario))
    assert normalise(ours) == normalise(expected["chunks"])
    assert expected["calls"] == len(scenario["script"])
