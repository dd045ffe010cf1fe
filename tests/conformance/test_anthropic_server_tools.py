"""Anthropic's server tools through Stepline and through `ai@7` + `@ai-sdk/anthropic`, on the same wire.

For each tool the fake Messages API streams the same events to both: the real SDK
(`tests/node/anthropic_tools.mjs`: `streamText` with `createAnthropic({baseURL})` and
`toUIMessageStream({sendSources: true})`) and Stepline (`stream_text` on `AnthropicModel`, the
recorder's `send_sources`). Compared: the UI chunks (source ids are random on both sides, so
they are numbered in order), the request each sends — the tool definitions, the beta header —
and, for the next step and the next turn (the UI message converted back), the `server_tool_use`
and `*_tool_result` blocks sent back to Anthropic.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from typing import Any

import pytest

from stepline.llm.anthropic import AnthropicModel
from stepline.llm.anthropic import tools as anthropic_tools
from stepline.llm.base import close_model
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import stream_text
from stepline.loop.tools import Tool
from stepline.protocol.chunks import parse_chunk
from stepline.protocol.parts import UIMessage
from stepline.protocol.reducer import reduce_ui_message_stream
from stepline.protocol.to_chunks import UIStreamOptions
from stepline.protocol.to_model_messages import convert_to_model_messages
from tests.support import fake_anthropic as fa
from tests.support.anthropic_tool_streams import SCENARIOS, Scenario
from tests.support.sdk_oracle import NODE_DIR

Json = dict[str, Any]
MODEL = "claude-sonnet-4-6"
PROMPT, FOLLOW_UP = "What is the weather in Paris?", "Thanks!"
WEATHER = {"city": "Paris", "temperature": 18}
FACTORIES = {
    "webSearch_20250305": anthropic_tools.web_search,
    "webFetch_20250910": anthropic_tools.web_fetch,
    "codeExecution_20250825": anthropic_tools.code_execution,
}
SNAKE = {
    "maxUses": "max_uses",
    "allowedDomains": "allowed_domains",
    "blockedDomains": "blocked_domains",
    "userLocation": "user_location",
    "maxContentTokens": "max_content_tokens",
}


def _script(fake: fa.FakeAnthropic, scenario: Scenario) -> None:
    fake.reply(*(fa.StreamReply(events) for events in scenario.replies), fa.StreamReply(scenario.follow_up))


def run_sdk(scenario: Scenario) -> tuple[Json, list[fa.RecordedRequest]]:
    node = shutil.which("node")
    assert node is not None
    tools: Json = {FACTORIES[scenario.tool]().name: {"factory": scenario.tool, "args": scenario.args}}
    if scenario.client_tool:
        tools["weather"] = {"kind": "returns", "value": WEATHER}
    with fa.FakeAnthropic() as fake:
        _script(fake, scenario)
        request = {
            "baseURL": f"{fake.base_url}/v1",
            "model": MODEL,
            "tools": tools,
            "prompt": PROMPT,
            "stopSteps": scenario.steps,
            "followUp": FOLLOW_UP,
        }
        done = subprocess.run(
            [node, str(NODE_DIR / "anthropic_tools.mjs")],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            cwd=NODE_DIR,
            check=False,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout), list(fake.requests)


def stepline_tools(scenario: Scenario) -> list[Tool]:
    arguments = {SNAKE.get(key, key): value for key, value in scenario.args.items()}
    if "citations" in arguments:
        arguments["citations"] = arguments["citations"]["enabled"]
    tools = [FACTORIES[scenario.tool](**arguments)]
    if scenario.client_tool:

        async def weather(_: Any) -> Any:
            return WEATHER

        tools.append(Tool(name="weather", input_schema={"type": "object"}, execute=weather))
    return tools


async def _turn(model: AnthropicModel, scenario: Scenario, **source: Any) -> list[Json]:
    result = stream_text(
        model=model,
        tools=stepline_tools(scenario),
        stop_when=is_step_count(scenario.steps),
        message_id="msg-1",
        **source,
    )
    return [chunk.to_wire() async for chunk in result.ui_message_stream(UIStreamOptions(send_sources=True))]


async def _stepline(fake: fa.FakeAnthropic, scenario: Scenario) -> tuple[list[Json], Json, list[Json]]:
    model = AnthropicModel(MODEL, api_key="sk-ant-test-0123456789", base_url=fake.base_url)
    try:
        chunks = await _turn(model, scenario, prompt=PROMPT)
        message = reduce_ui_message_stream([parse_chunk(chunk) for chunk in chunks]).message
        assert message is not None
        history = [
            UIMessage.model_validate({"id": "u1", "role": "user", "parts": [{"type": "text", "text": PROMPT}]}),
            UIMessage.model_validate(message),
            UIMessage.model_validate({"id": "u2", "role": "user", "parts": [{"type": "text", "text": FOLLOW_UP}]}),
        ]
        follow_up = await _turn(model, scenario, messages=convert_to_model_messages(history))
        return chunks, message, follow_up
    finally:
        await close_model(model)


def run_stepline(scenario: Scenario) -> tuple[list[Json], Json, list[fa.RecordedRequest]]:
    with fa.FakeAnthropic() as fake:
        _script(fake, scenario)
        chunks, message, _ = asyncio.run(_stepline(fake, scenario))
        assert fake.unused_replies == 0
        return chunks, message, list(fake.requests)


def comparable(chunks: list[Json]) -> list[Json]:
    """Source ids numbered in order; the SDK's `anthropic.message_start` custom chunk left out (Stepline
    has no such part); the message id and finish metadata are each side's own."""
    names: dict[str, str] = {}
    out: list[Json] = []
    for chunk in chunks:
        if chunk["type"] == "custom" and chunk.get("kind") == "anthropic.message_start":
            continue
        if chunk["type"] in ("source-url", "source-document"):
            chunk = {**chunk, "sourceId": names.setdefault(chunk["sourceId"], f"source-{len(names) + 1}")}
        if chunk["type"] in ("start", "finish", "message-metadata"):
            chunk = {"type": chunk["type"]}
        out.append(chunk)
    return out


def sent(request: fa.RecordedRequest) -> Json:
    """What a request tells Anthropic about the tools and the conversation.

    The SDK also sends `structured-outputs-2025-11-13` whenever a function tool is declared (for
    strict tools); Stepline sends it only with structured output, so that beta is left out here.
    """
    betas = (request.headers.get("anthropic-beta") or "").split(",")
    return {
        "tools": request.body.get("tools"),
        "messages": request.body["messages"],
        "betas": sorted(beta for beta in betas if beta and beta != "structured-outputs-2025-11-13"),
    }


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_ui_chunks_and_requests_match_the_ai_sdk(name: str) -> None:
    scenario = SCENARIOS[name]
    expected, sdk_requests = run_sdk(scenario)
    chunks, _, requests = run_stepline(scenario)

    assert comparable(chunks) == comparable(expected["chunks"])
    assert len(requests) == len(sdk_requests) == scenario.steps + 1
    for ours, theirs in zip(requests, sdk_requests, strict=True):
        assert sent(ours) == sent(theirs)
