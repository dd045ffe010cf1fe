"""OpenAI's built-in tools where they cannot run: refused before any request reaches the provider.

Only the Responses API has them. Chat Completions, an `api="auto"` model on a server without the
Responses API, and an Anthropic model all raise `UnsupportedCapabilityError` naming the tool,
and the fake server records no model request.
"""

from __future__ import annotations

import asyncio

import pytest

from stepline.llm.anthropic import AnthropicModel
from stepline.llm.base import FunctionTool, LanguageModel, ModelCallOptions, close_model
from stepline.llm.errors import UnsupportedCapabilityError
from stepline.llm.openai import OpenAIApiCache, OpenAIChatModel, OpenAIModel, aclose_openai_clients
from stepline.llm.openai import tools as openai_tools
from stepline.protocol.model_messages import ModelTextPart, UserModelMessage
from tests.support import fake_openai as fo
from tests.support import openai_tool_events as ev
from tests.support.fake_anthropic import FakeAnthropic

WEATHER = FunctionTool(name="weather", input_schema={"type": "object"})
TOOLS = [
    openai_tools.web_search(),
    openai_tools.file_search(["vs_1"]),
    openai_tools.code_interpreter(),
    openai_tools.image_generation(),
]


def options(tool_index: int) -> ModelCallOptions:
    return ModelCallOptions(
        prompt=[UserModelMessage(content=[ModelTextPart(text="Hi")])],
        tools=[WEATHER, TOOLS[tool_index].definition()],
    )


def refused(model: LanguageModel, call: ModelCallOptions) -> UnsupportedCapabilityError:
    async def run() -> None:
        try:
            async for _ in model.stream(call):
                pass
        finally:
            await close_model(model)
            await aclose_openai_clients()

    with pytest.raises(UnsupportedCapabilityError) as caught:
        asyncio.run(run())
    return caught.value


@pytest.mark.parametrize("index", range(len(TOOLS)))
def test_chat_completions_refuses_them_before_any_request(index: int) -> None:
    with fo.FakeOpenAI() as fake:
        error = refused(OpenAIChatModel("gpt-4.1", base_url=fake.base_url, api_key=fo.API_KEY), options(index))
        assert fake.requests == []
    tool = TOOLS[index].provider
    assert tool is not None and tool.id in str(error) and "Chat Completions" in str(error)
    assert (error.provider, error.model_id) == ("openai", "gpt-4.1")


def test_auto_does_not_fall_back_to_chat_with_a_built_in_tool() -> None:
    with fo.FakeOpenAI(responses_api=False) as fake:
        model = OpenAIModel("gpt-4.1", base_url=fake.base_url, api_key=fo.API_KEY, api_cache=OpenAIApiCache())
        error = refused(model, options(0))
        # Only the probe reached the server; no chat request was made.
        assert [request.path for request in fake.requests] == [fo.RESPONSES_PATH]
        assert fake.requests_to(fo.CHAT_PATH) == []
    assert "openai.web_search" in str(error) and "Responses API" in str(error)


def test_auto_uses_the_responses_api_when_the_server_has_it() -> None:
    with fo.FakeOpenAI() as fake:
        # OpenAI answers the empty probe with 400 (no model), then the call streams.
        fake.responses(fo.error_reply(400, "missing model"), fo.responses_stream(ev.web_search_response()))
        model = OpenAIModel("gpt-4.1", base_url=fake.base_url, api_key=fo.API_KEY, api_cache=OpenAIApiCache())
        parts = fo.collect(model, options(0))
        assert fake.last_body(fo.RESPONSES_PATH)["tools"][1] == {"type": "web_search"}
        fake.assert_all_consumed()
    assert [p["toolName"] for p in parts if p["type"] == "tool-result"] == ["web_search"]


@pytest.mark.parametrize("index", range(len(TOOLS)))
def test_an_anthropic_model_refuses_an_openai_tool_before_any_request(index: int) -> None:
    with FakeAnthropic() as fake:
        model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test-key-0123456789", base_url=fake.base_url)
        error = refused(model, options(index))
        assert fake.requests == []
    tool = TOOLS[index].provider
    assert tool is not None and tool.id in str(error)
    assert error.provider == "anthropic"
