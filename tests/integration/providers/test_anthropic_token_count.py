"""Anthropic's own token count, through the real `anthropic` SDK against the local fake of the API.

Near the compaction limit the durable path asks `POST /v1/messages/count_tokens` for the exact count
of the next request and decides on it: the local count (one token per two bytes here, as no
tokenizer counts Claude's tokens offline) over-counts prose, so without the provider's count a
step would be summarized early.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest

from stepline import Agent, tool
from stepline.context.policy import ContextPolicy
from stepline.llm.anthropic import AnthropicModel
from stepline.llm.base import FunctionTool, ModelCallOptions
from stepline.llm.errors import ModelCallError
from stepline.protocol.model_messages import ModelTextPart, SystemModelMessage, UserModelMessage
from stepline.testing.harness import Harness
from tests.support.fake_anthropic import ErrorReply, FakeAnthropic, StreamReply, message, text_block

MODEL = "claude-sonnet-4-6"
KEY = "sk-ant-test-0123456789-secret"
COUNT_PATH = "/v1/messages/count_tokens"
# A 2,000-token window without an output reserve: compaction above 1,200 tokens of prompt.
POLICY = ContextPolicy(context_window=2_000, output_reserve=0, threshold=0.6)
PROSE = "The quarterly report covers revenue, churn and hiring in every region. " * 100  # ~1,300 tokens


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=KEY) as server:
        yield server


def model_for(fake: FakeAnthropic) -> AnthropicModel:
    return AnthropicModel(MODEL, api_key=KEY, base_url=fake.base_url)


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return city


def paths(fake: FakeAnthropic) -> list[str]:
    return [r.path.split("?")[0] for r in fake.requests]


def test_count_tokens_sends_what_the_endpoint_takes_and_returns_its_count(fake: FakeAnthropic) -> None:
    fake.count(1234)
    options = ModelCallOptions(
        prompt=[SystemModelMessage(content="Be brief."), UserModelMessage(content=[ModelTextPart(text="Hi")])],
        tools=[FunctionTool(name="lookup", input_schema={"type": "object"})],
        max_output_tokens=500,
        temperature=0.2,
    )
    model = model_for(fake)

    async def count() -> int:
        try:
            return await model.count_tokens(options)
        finally:
            await model.aclose()

    assert asyncio.run(count()) == 1234
    (request,) = fake.requests
    assert request.path == COUNT_PATH and "<redacted>" in request.headers.values()  # the key, as for messages
    assert set(request.body) == {"model", "messages", "system", "tools"}  # no max_tokens, stream or temperature
    assert request.body["model"] == MODEL
    assert request.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    assert "Be brief." in str(request.body["system"])
    assert [t["name"] for t in request.body["tools"]] == ["lookup"]


def test_a_failed_count_is_a_model_call_error(fake: FakeAnthropic) -> None:
    fake.count(ErrorReply(529, "overloaded_error", "Overloaded"))
    model = model_for(fake)

    async def count() -> int:
        try:
            return await model.count_tokens(
                ModelCallOptions(prompt=[UserModelMessage(content=[ModelTextPart(text="x")])])
            )
        finally:
            await model.aclose()

    with pytest.raises(ModelCallError) as caught:
        asyncio.run(count())
    assert caught.value.kind == "overloaded"


def _agent(policy: ContextPolicy = POLICY) -> Agent:
    return Agent(name="counted", instructions="Answer.", tools=[lookup], context=policy)


def test_near_the_limit_the_provider_s_count_decides_and_nothing_is_summarized_early(fake: FakeAnthropic) -> None:
    fake.count(700)  # the local count says ~1,400, over the limit of 1,200; Claude's says 700
    fake.reply(StreamReply(message(text_block(0, "Noted."))))
    result = Harness(_agent(), model=model_for(fake)).turn(PROSE)
    assert result.status == "completed", result.stream_errors
    assert paths(fake) == [COUNT_PATH, "/v1/messages"]  # counted, then answered: no summarizer call
    counted, answered = (r.body for r in fake.requests)
    assert counted["messages"] == answered["messages"] and counted["tools"] == answered["tools"]
    assert result.message["parts"][-1]["text"] == "Noted."
    assert "compactions" not in result.message["metadata"]["context"]


def test_a_short_prompt_is_never_counted_remotely(fake: FakeAnthropic) -> None:
    fake.reply(StreamReply(message(text_block(0, "Hi."))))
    result = Harness(_agent(), model=model_for(fake)).turn("Hello")
    assert result.status == "completed"
    assert paths(fake) == ["/v1/messages"]


def test_provider_count_off_decides_on_the_local_count_alone(fake: FakeAnthropic) -> None:
    fake.reply(StreamReply(message(text_block(0, "Noted."))))
    policy = POLICY.model_copy(update={"provider_count": False, "threshold": 1.0})
    result = Harness(_agent(policy), model=model_for(fake)).turn(PROSE)
    assert result.status == "completed"
    assert COUNT_PATH not in paths(fake)


def test_when_the_count_fails_the_local_count_is_used_and_the_run_goes_on(
    fake: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    fake.count(ErrorReply(500, "api_error", "Internal server error"))
    fake.reply(StreamReply(message(text_block(0, "Noted."))))
    policy = POLICY.model_copy(update={"threshold": 1.0})  # the local count stays under this limit
    with caplog.at_level(logging.WARNING, logger="stepline.runtime"):
        result = Harness(_agent(policy), model=model_for(fake)).turn(PROSE)
    assert result.status == "completed", result.stream_errors
    assert paths(fake) == [COUNT_PATH, "/v1/messages"]
    assert any("token count failed" in r.getMessage() for r in caplog.records)
    assert KEY not in caplog.text
