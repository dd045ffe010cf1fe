"""OpenAIModel(api="auto"): probe the Responses API once per base URL, fall back to Chat Completions."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from stepline.llm.base import ModelCallOptions, close_model
from stepline.llm.errors import ModelCallError
from stepline.llm.openai import OpenAIApiCache, OpenAIModel, OpenAIResponsesModel, aclose_openai_clients
from stepline.llm.stream_parts import ModelStreamPart
from stepline.protocol.model_messages import ModelTextPart, UserModelMessage
from tests.support.fake_openai import (
    API_KEY,
    CHAT_PATH,
    RESPONSES_PATH,
    FakeOpenAI,
    chat_stream,
    chat_text_chunks,
    collect,
    collect_failure,
    error_reply,
    responses_stream,
    responses_text_events,
)

OPTIONS = ModelCallOptions(prompt=[UserModelMessage(content=[ModelTextPart(text="Hi")])])


@pytest.fixture
def compat() -> Iterator[FakeOpenAI]:
    """An OpenAI-compatible server without the Responses API."""
    with FakeOpenAI(responses_api=False) as server:
        yield server
        server.assert_all_consumed()


@pytest.fixture
def full() -> Iterator[FakeOpenAI]:
    """A server with the Responses API (it answers the empty probe with 400, as OpenAI does)."""
    with FakeOpenAI() as server:
        yield server
        server.assert_all_consumed()


def auto(server: FakeOpenAI, cache: OpenAIApiCache, **kwargs: Any) -> OpenAIModel:
    return OpenAIModel("gpt-4.1", base_url=server.base_url, api_key=API_KEY, api_cache=cache, **kwargs)


def text_of(parts: list[dict[str, Any]]) -> str:
    return "".join(part["delta"] for part in parts if part["type"] == "text-delta")


def test_a_404_on_responses_falls_back_to_chat_and_is_remembered(compat: FakeOpenAI) -> None:
    cache = OpenAIApiCache()
    compat.chat(chat_stream(chat_text_chunks("first")), chat_stream(chat_text_chunks("second")))

    first = collect(auto(compat, cache), OPTIONS)
    second = collect(auto(compat, cache), OPTIONS)  # a new model object, same base URL

    assert (text_of(first), text_of(second)) == ("first", "second")
    assert [request.path for request in compat.requests] == [RESPONSES_PATH, CHAT_PATH, CHAT_PATH]
    probe = compat.requests[0]
    assert (probe.method, probe.body, probe.auth_ok) == ("POST", {}, True)
    assert cache.get(compat.base_url.rstrip("/")) == "chat"


def test_a_server_with_responses_is_used_through_responses(full: FakeOpenAI) -> None:
    cache = OpenAIApiCache()
    full.responses(
        error_reply(400, "Missing required parameter: 'model'.", code="missing_required_parameter"),
        responses_stream(responses_text_events("via responses")),
        responses_stream(responses_text_events("again")),
    )

    first = collect(auto(full, cache), OPTIONS)
    second = collect(auto(full, cache), OPTIONS)

    assert (text_of(first), text_of(second)) == ("via responses", "again")
    assert [request.body.get("model") for request in full.requests] == [None, "gpt-4.1", "gpt-4.1"]


def test_concurrent_calls_share_one_probe(compat: FakeOpenAI) -> None:
    cache = OpenAIApiCache()
    compat.chat(*(chat_stream(chat_text_chunks(f"answer {n}")) for n in range(3)))

    async def run_all() -> list[list[ModelStreamPart]]:
        async def run_one() -> list[ModelStreamPart]:
            return [part async for part in auto(compat, cache).stream(OPTIONS)]

        try:
            return list(await asyncio.gather(run_one(), run_one(), run_one()))
        finally:
            await aclose_openai_clients()

    results = asyncio.run(run_all())

    assert len(results) == 3
    assert len(compat.requests_to(RESPONSES_PATH)) == 1
    assert len(compat.requests_to(CHAT_PATH)) == 3


def test_a_failed_probe_is_not_remembered() -> None:
    with FakeOpenAI() as server:
        base_url = server.base_url
    cache = OpenAIApiCache()
    unreachable = OpenAIModel("gpt-4.1", base_url=base_url, api_key=API_KEY, api_cache=cache, timeout=2)

    parts, error = collect_failure(unreachable, OPTIONS)

    assert parts == []
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable) == ("connection", True)
    assert cache.get(base_url) is None


def test_capabilities_follow_the_probed_api(compat: FakeOpenAI) -> None:
    cache = OpenAIApiCache()
    model = auto(compat, cache)
    compat.chat(chat_stream(chat_text_chunks("ok")))

    before = model.capabilities.input_media_types
    collect(model, OPTIONS)
    after = model.capabilities.input_media_types

    assert before == ("image/*", "application/pdf")  # optimistic: OpenAI's own API
    assert after == ("image/*",)  # Chat Completions takes images only


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_fixed_api_never_probes(full: FakeOpenAI, api: str) -> None:
    if api == "chat":
        full.chat(chat_stream(chat_text_chunks("ok")))
    else:
        full.responses(responses_stream(responses_text_events("ok")))

    parts = collect(auto(full, OpenAIApiCache(), api=api), OPTIONS)

    assert text_of(parts) == "ok"
    assert len(full.requests) == 1


def test_models_share_one_sdk_client_per_base_url_and_key_without_sdk_retries(full: FakeOpenAI) -> None:
    async def clients() -> tuple[Any, Any, Any, Any, bool]:
        try:
            model = OpenAIResponsesModel("gpt-4.1", base_url=full.base_url, api_key=API_KEY)
            first = model.client()
            second = OpenAIModel("gpt-5", base_url=full.base_url + "/", api_key=API_KEY).client()
            other_key = OpenAIResponsesModel("gpt-4.1", base_url=full.base_url, api_key="sk-other-key-0000").client()
            await close_model(model)
            return first, second, other_key, model.client(), first.is_closed()
        finally:
            await aclose_openai_clients()

    first, second, other_key, after_close, first_closed = asyncio.run(clients())

    assert first is second
    assert other_key is not first
    assert first.max_retries == 0
    assert first_closed and after_close is not first  # close_model released it; the next call makes another
