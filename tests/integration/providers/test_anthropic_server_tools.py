"""Anthropic's server tools in the request, and the ones that cannot be sent, with the real `anthropic` SDK.

A server tool reaches the wire as its `tools` entry and beta header; one the Messages API cannot
run (another provider's, an Anthropic tool Stepline does not map, any server tool on a model
without them) raises `UnsupportedCapabilityError` before any request; arguments of the wrong shape
are a non-retryable bad request naming the path, not the value.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from stepline.llm.anthropic import AnthropicModel
from stepline.llm.anthropic import tools as anthropic_tools
from stepline.llm.base import FunctionTool, ModelCallOptions, ProviderTool, ToolDefinition
from stepline.llm.errors import ModelCallError, UnsupportedCapabilityError
from stepline.loop.stream_text import stream_text
from stepline.protocol.model_messages import ModelTextPart, UserModelMessage
from tests.support.fake_anthropic import FakeAnthropic, StreamReply, message, text_block

KEY = "sk-ant-test-0123456789-secret"
WEATHER = FunctionTool(name="weather", input_schema={"type": "object"})


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=KEY) as server:
        yield server


def call(fake: FakeAnthropic, tools: list[ToolDefinition], model_id: str = "claude-sonnet-4-6") -> None:
    model = AnthropicModel(model_id, api_key=KEY, base_url=fake.base_url)
    options = ModelCallOptions(prompt=[UserModelMessage(content=[ModelTextPart(text="Hi")])], tools=tools)

    async def collect() -> None:
        try:
            async for _ in model.stream(options):
                pass
        finally:
            await model.aclose()

    asyncio.run(collect())


def definition(tool: Any) -> ProviderTool:
    provider = tool.definition()
    assert isinstance(provider, ProviderTool)
    return provider


def test_each_server_tool_reaches_the_wire_with_its_beta_in_the_callers_order(fake: FakeAnthropic) -> None:
    fake.reply(StreamReply(message(text_block(0, "ok"))))
    tools: list[ToolDefinition] = [
        definition(anthropic_tools.code_execution()),
        WEATHER,
        definition(
            anthropic_tools.web_search(
                max_uses=3, allowed_domains=["docs.python.org"], user_location={"city": "Paris", "country": "FR"}
            )
        ),
        definition(anthropic_tools.web_fetch(blocked_domains=["x.example"], citations=True, max_content_tokens=900)),
    ]

    call(fake, tools)

    (request,) = fake.requests
    assert request.body["tools"] == [
        {"type": "code_execution_20250825", "name": "code_execution"},
        {"name": "weather", "input_schema": {"type": "object"}, "eager_input_streaming": True},
        {
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": 3,
            "allowed_domains": ["docs.python.org"],
            "user_location": {"type": "approximate", "city": "Paris", "country": "FR"},
        },
        {
            "type": "web_fetch_20250910",
            "name": "web_fetch",
            "blocked_domains": ["x.example"],
            "citations": {"enabled": True},
            "max_content_tokens": 900,
        },
    ]
    assert request.headers["anthropic-beta"] == "code-execution-2025-08-25,web-fetch-2025-09-10"


@pytest.mark.parametrize("model_id", ["claude-3-5-haiku-latest", "claude-3-7-sonnet-20250219", "claude-opus-4-1"])
def test_models_with_server_tools_get_them(fake: FakeAnthropic, model_id: str) -> None:
    fake.reply(StreamReply(message(text_block(0, "ok"))))
    call(fake, [definition(anthropic_tools.web_search())], model_id)
    assert fake.requests[0].body["tools"] == [{"type": "web_search_20250305", "name": "web_search"}]


@pytest.mark.parametrize(
    ("tool", "model_id", "says"),
    [
        (ProviderTool(id="openai.web_search", name="web_search"), "claude-sonnet-4-6", "is openai's"),
        (ProviderTool(id="anthropic.computer_20250124", name="computer"), "claude-sonnet-4-6", "its server tools are"),
        (definition(anthropic_tools.web_search()), "claude-3-haiku-20240307", "has no server tools"),
        (definition(anthropic_tools.code_execution()), "claude-3-5-sonnet-20240620", "has no server tools"),
    ],
    ids=["another provider's", "unmapped anthropic tool", "claude 3 haiku", "claude 3.5 sonnet"],
)
def test_a_provider_tool_the_model_cannot_run_fails_before_any_request(
    fake: FakeAnthropic, tool: ProviderTool, model_id: str, says: str
) -> None:
    with pytest.raises(UnsupportedCapabilityError) as caught:
        call(fake, [WEATHER, tool], model_id)
    assert tool.id in str(caught.value) and says in str(caught.value)
    assert (caught.value.provider, caught.value.model_id) == ("anthropic", model_id)
    assert fake.requests == []


@pytest.mark.parametrize(
    ("tool", "says"),
    [
        (ProviderTool(id="anthropic.web_search_20250305", name="web_search", args={"maxUses": "lots"}), "maxUses"),
        (ProviderTool(id="anthropic.web_fetch_20250910", name="web_fetch", args={"max_uses": 2}), "max_uses"),
        (ProviderTool(id="anthropic.web_search_20250305", name="search"), "must be named 'web_search'"),
    ],
    ids=["wrong type", "snake_case key", "wrong name"],
)
def test_bad_arguments_are_a_bad_request_naming_the_path_not_the_value(
    fake: FakeAnthropic, tool: ProviderTool, says: str
) -> None:
    with pytest.raises(ModelCallError) as caught:
        call(fake, [tool])
    assert caught.value.kind == "bad_request" and caught.value.retryable is False
    assert says in str(caught.value) and "lots" not in str(caught.value)
    assert fake.requests == []


def test_the_factories_check_their_arguments_when_the_agent_is_defined() -> None:
    with pytest.raises(ValueError, match="cannot be used together"):
        anthropic_tools.web_search(allowed_domains=["a.example"], blocked_domains=["b.example"])
    with pytest.raises(ValueError, match="a list of names"):
        anthropic_tools.web_fetch(allowed_domains="a.example")
    with pytest.raises(ValueError, match="approximate"):
        anthropic_tools.web_search(user_location={"type": "exact", "city": "Paris"})
    tool = anthropic_tools.web_search()
    assert (tool.name, tool.client_side, tool.execute) == ("web_search", False, None)


def test_through_the_loop_the_run_fails_before_any_request(fake: FakeAnthropic) -> None:
    async def run() -> tuple[list[dict[str, Any]], str | None]:
        model = AnthropicModel("claude-3-haiku-20240307", api_key=KEY, base_url=fake.base_url)
        result = stream_text(model=model, prompt="hi", tools=[anthropic_tools.web_search()], message_id="m")
        try:
            chunks = [chunk.to_wire() async for chunk in result.ui_message_stream()]
            return chunks, await result.finish_reason()
        finally:
            await model.aclose()

    chunks, reason = asyncio.run(run())
    assert [chunk["type"] for chunk in chunks] == ["start", "error"] and reason == "error"
    assert fake.requests == []
