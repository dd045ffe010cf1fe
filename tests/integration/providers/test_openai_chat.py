"""OpenAIChatModel through the real `openai` SDK against the local wire-format server."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from stepline.llm.base import FunctionTool, ModelCallOptions, ResponseFormat
from stepline.llm.errors import ModelCallError, UnsupportedCapabilityError
from stepline.llm.openai import OpenAIChatModel
from stepline.llm.openai.options import CHAT_OPTION_KEYS
from stepline.protocol.model_messages import (
    AssistantModelMessage,
    DataFileData,
    ErrorTextOutput,
    ExecutionDeniedOutput,
    ModelFilePart,
    ModelMessage,
    ModelReasoningPart,
    ModelTextPart,
    SystemModelMessage,
    ToolCallPart,
    ToolModelMessage,
    ToolResultPart,
    UrlFileData,
    UserModelMessage,
)
from tests.support.fake_openai import (
    API_KEY,
    CHAT_PATH,
    FakeOpenAI,
    chat_stream,
    chat_text_chunks,
    collect,
    collect_failure,
    error_reply,
)

BASE = {"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "gpt-4.1"}


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server
        server.assert_all_consumed()


def model(fake: FakeOpenAI, model_id: str = "gpt-4.1", **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel(model_id, base_url=fake.base_url, api_key=API_KEY, **kwargs)


def user(text: str) -> UserModelMessage:
    return UserModelMessage(content=[ModelTextPart(text=text)])


def call(*messages: ModelMessage, **kwargs: Any) -> ModelCallOptions:
    return ModelCallOptions(prompt=list(messages) or [user("Hi")], **kwargs)


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}], "usage": None}


def usage_chunk(usage: dict[str, Any]) -> dict[str, Any]:
    return {**BASE, "choices": [], "usage": usage}


def tool_delta(
    index: int, *, call_id: str | None = None, name: str | None = None, arguments: str = ""
) -> dict[str, Any]:
    delta: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        delta.update(id=call_id, type="function")
        delta["function"]["name"] = name
    return delta


# --- streaming ---------------------------------------------------------------------------------


def test_plain_text_with_usage_streams_as_the_sdk_parts(fake: FakeOpenAI) -> None:
    fake.chat(chat_stream(chat_text_chunks("Hello there")))

    parts = collect(model(fake), call(SystemModelMessage(content="Be brief."), user("Hi"), headers={"x-trace": "t"}))

    assert parts == [
        {"type": "stream-start", "warnings": []},
        {"type": "response-metadata", "id": "chatcmpl-1", "modelId": "gpt-4.1", "timestamp": "2023-11-14T22:13:20Z"},
        {"type": "text-start", "id": "text-0"},
        {"type": "text-delta", "id": "text-0", "delta": "Hello"},
        {"type": "text-delta", "id": "text-0", "delta": " there"},
        {"type": "text-end", "id": "text-0"},
        {
            "type": "finish",
            "usage": {
                "inputTokens": {"total": 9, "noCache": 5, "cacheRead": 4},
                "outputTokens": {"total": 2, "text": 2, "reasoning": 0},
                "raw": {
                    "prompt_tokens": 9,
                    "completion_tokens": 2,
                    "total_tokens": 11,
                    "prompt_tokens_details": {"cached_tokens": 4},
                    "completion_tokens_details": {"reasoning_tokens": 0},
                },
            },
            "finishReason": {"unified": "stop", "raw": "stop"},
        },
    ]
    [request] = fake.requests
    assert request.path == CHAT_PATH
    assert request.body == {
        "model": "gpt-4.1",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    }
    assert request.auth_ok and request.headers["authorization"] == "Bearer [redacted]"
    assert request.headers["x-trace"] == "t"


def test_reasoning_content_deltas_become_reasoning_parts_before_the_text(fake: FakeOpenAI) -> None:
    chunks = [
        chunk({"role": "assistant", "reasoning_content": "Let me "}),
        chunk({"reasoning_content": "think."}),
        chunk({"content": "42"}),
        chunk({}, "stop"),
    ]
    fake.chat(chat_stream(chunks))

    parts = collect(model(fake, "deepseek-reasoner"), call())

    assert [part for part in parts if part["type"] not in ("stream-start", "response-metadata", "finish")] == [
        {"type": "reasoning-start", "id": "reasoning-0"},
        {"type": "reasoning-delta", "id": "reasoning-0", "delta": "Let me "},
        {"type": "reasoning-delta", "id": "reasoning-0", "delta": "think."},
        {"type": "reasoning-end", "id": "reasoning-0"},
        {"type": "text-start", "id": "text-0"},
        {"type": "text-delta", "id": "text-0", "delta": "42"},
        {"type": "text-end", "id": "text-0"},
    ]
    # Without a usage chunk every count is unknown: absent, never 0.
    assert parts[-1]["usage"] == {"inputTokens": {}, "outputTokens": {}}


def test_a_tool_call_streams_its_arguments(fake: FakeOpenAI) -> None:
    chunks = [
        chunk({"role": "assistant", "content": None, "tool_calls": [tool_delta(0, call_id="call_1", name="weather")]}),
        chunk({"tool_calls": [tool_delta(0, arguments='{"city"')]}),
        chunk({"tool_calls": [tool_delta(0, arguments=':"Paris"}')]}),
        chunk({}, "tool_calls"),
    ]
    fake.chat(chat_stream(chunks))
    tool = FunctionTool(name="weather", input_schema={"type": "object"}, description="Weather", strict=True)

    parts = collect(model(fake), call(tools=[tool], tool_choice={"type": "tool", "toolName": "weather"}))

    assert parts[2:] == [
        {"type": "tool-input-start", "id": "call_1", "toolName": "weather"},
        {"type": "tool-input-delta", "id": "call_1", "delta": '{"city"'},
        {"type": "tool-input-delta", "id": "call_1", "delta": ':"Paris"}'},
        {"type": "tool-input-end", "id": "call_1"},
        {"type": "tool-call", "toolCallId": "call_1", "toolName": "weather", "input": '{"city":"Paris"}'},
        {
            "type": "finish",
            "usage": {"inputTokens": {}, "outputTokens": {}},
            "finishReason": {"unified": "tool-calls", "raw": "tool_calls"},
        },
    ]
    body = fake.last_body(CHAT_PATH)
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "weather", "description": "Weather", "parameters": {"type": "object"}, "strict": True},
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "weather"}}


def test_parallel_tool_calls_are_told_apart_by_index(fake: FakeOpenAI) -> None:
    chunks = [
        chunk({"tool_calls": [tool_delta(0, call_id="call_a", name="add", arguments='{"a":1,')]}),
        chunk({"tool_calls": [tool_delta(1, call_id="call_b", name="mul", arguments='{"a":')]}),
        chunk({"tool_calls": [tool_delta(0, arguments='"b":2}')]}),
        chunk({"tool_calls": [tool_delta(1, arguments='3,"b":4}')]}),
        chunk({}, "tool_calls"),
        usage_chunk({"prompt_tokens": 20, "completion_tokens": 10}),
    ]
    fake.chat(chat_stream(chunks))

    parts = collect(model(fake), call())

    calls = [(part["toolCallId"], part["toolName"], part["input"]) for part in parts if part["type"] == "tool-call"]
    assert calls == [("call_a", "add", '{"a":1,"b":2}'), ("call_b", "mul", '{"a":3,"b":4}')]
    assert parts[-1]["usage"] == {
        "inputTokens": {"total": 20},
        "outputTokens": {"total": 10},
        "raw": {"prompt_tokens": 20, "completion_tokens": 10},
    }


def test_history_with_tool_results_and_reasoning_becomes_chat_messages(fake: FakeOpenAI) -> None:
    fake.chat(chat_stream(chat_text_chunks("done")))
    history = [
        user("add"),
        AssistantModelMessage(
            content=[
                ModelReasoningPart(text="hidden", provider_options={"openai": {"itemId": "rs_1"}}),
                ToolCallPart(tool_call_id="call_a", tool_name="add", input={"a": 1}),
                ToolCallPart(tool_call_id="call_b", tool_name="rm", input={"path": "/"}),
            ]
        ),
        ToolModelMessage(
            content=[
                ToolResultPart(tool_call_id="call_a", tool_name="add", output=ErrorTextOutput(value="bad input")),
                ToolResultPart(tool_call_id="call_b", tool_name="rm", output=ExecutionDeniedOutput()),
            ]
        ),
    ]

    collect(model(fake), call(*history))

    assert fake.last_body(CHAT_PATH)["messages"][1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": '{"a":1}'}},
                {"id": "call_b", "type": "function", "function": {"name": "rm", "arguments": '{"path":"/"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "bad input"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Tool call execution denied."},
    ]


@pytest.mark.parametrize(
    ("finish_reason", "unified"),
    [("stop", "stop"), ("length", "length"), ("content_filter", "content-filter"), ("tool_calls", "tool-calls")],
)
def test_finish_reasons(fake: FakeOpenAI, finish_reason: str, unified: str) -> None:
    fake.chat(chat_stream([chunk({"content": "x"}), chunk({}, finish_reason)]))

    parts = collect(model(fake), call())

    assert parts[-1]["finishReason"] == {"unified": unified, "raw": finish_reason}


def test_an_error_chunk_in_the_stream_becomes_an_error_part(fake: FakeOpenAI) -> None:
    error = {"error": {"message": "upstream overloaded", "type": "server_error", "code": "overloaded", "param": None}}
    fake.chat(chat_stream([chunk({"content": "Hel"}), error], done=False))

    parts = collect(model(fake), call())

    assert [part["type"] for part in parts] == [
        "stream-start",
        "response-metadata",
        "text-start",
        "text-delta",
        "error",
        "text-end",
        "finish",
    ]
    error = parts[4]["error"]
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable) == ("overloaded", True)
    assert str(error) == "OpenAI Chat Completions stream error overloaded: upstream overloaded"
    assert parts[-1]["finishReason"] == {"unified": "error"}


# --- providerOptions ---------------------------------------------------------------------------

Read = Callable[[dict[str, Any]], Any]


def body_field(name: str) -> Read:
    return lambda body: body.get(name)


@dataclass(frozen=True)
class KeyCase:
    key: str
    value: Any
    read: Read
    expected: Any
    model_id: str = "gpt-4.1"
    call_settings: dict[str, Any] = field(default_factory=dict[str, Any])


CHAT_KEY_CASES = [
    KeyCase("logitBias", {"50256": -100}, body_field("logit_bias"), {"50256": -100}),
    KeyCase("logprobs", 2, lambda body: (body.get("logprobs"), body.get("top_logprobs")), (True, 2)),
    KeyCase("parallelToolCalls", False, body_field("parallel_tool_calls"), False),
    KeyCase("user", "u-1", body_field("user"), "u-1"),
    KeyCase("reasoningEffort", "minimal", body_field("reasoning_effort"), "minimal", "o4-mini"),
    KeyCase("maxCompletionTokens", 256, body_field("max_completion_tokens"), 256),
    KeyCase("store", True, body_field("store"), True),
    KeyCase("metadata", {"run": "r1"}, body_field("metadata"), {"run": "r1"}),
    KeyCase(
        "prediction",
        {"type": "content", "content": "draft"},
        body_field("prediction"),
        {"type": "content", "content": "draft"},
    ),
    KeyCase("serviceTier", "priority", body_field("service_tier"), "priority"),
    KeyCase(
        "strictJsonSchema",
        False,
        body_field("response_format"),
        {"type": "json_schema", "json_schema": {"schema": {"type": "object"}, "strict": False, "name": "answer"}},
        call_settings={"response_format": ResponseFormat(schema={"type": "object"}, name="answer")},
    ),
    KeyCase("textVerbosity", "high", body_field("verbosity"), "high"),
    KeyCase("promptCacheKey", "chat-42", body_field("prompt_cache_key"), "chat-42"),
    KeyCase("promptCacheOptions", {"mode": "implicit"}, body_field("prompt_cache_options"), {"mode": "implicit"}),
    KeyCase("promptCacheRetention", "in_memory", body_field("prompt_cache_retention"), "in_memory"),
    KeyCase("safetyIdentifier", "user-hash", body_field("safety_identifier"), "user-hash"),
    KeyCase("systemMessageMode", "remove", lambda body: body["messages"], [{"role": "user", "content": "Hi"}]),
    KeyCase(
        "forceReasoning",
        True,
        lambda body: (body["messages"][0]["role"], body.get("max_completion_tokens"), body.get("max_tokens")),
        ("developer", 100, None),
        "my-proxy-model",
        call_settings={"max_output_tokens": 100},
    ),
]


def test_the_cases_cover_the_18_chat_keys_of_the_spec() -> None:
    keys = [case.key for case in CHAT_KEY_CASES]
    assert len(keys) == len(set(keys)) == 18
    assert set(keys) == CHAT_OPTION_KEYS


@pytest.mark.parametrize("case", CHAT_KEY_CASES, ids=[case.key for case in CHAT_KEY_CASES])
def test_every_provider_option_reaches_its_request_field(fake: FakeOpenAI, case: KeyCase) -> None:
    fake.chat(chat_stream(chat_text_chunks("ok")))
    options = ModelCallOptions(
        prompt=[SystemModelMessage(content="Rules."), user("Hi")],
        provider_options={"openai": {case.key: case.value}},
        **case.call_settings,
    )

    parts = collect(model(fake, case.model_id), options)

    expected_warnings = (
        [{"type": "other", "message": "system messages are removed for this model"}]
        if case.key == "systemMessageMode"
        else []
    )
    assert parts[0] == {"type": "stream-start", "warnings": expected_warnings}
    assert case.read(fake.last_body(CHAT_PATH)) == case.expected


def test_unknown_and_responses_only_keys_are_warnings_and_are_not_sent(fake: FakeOpenAI) -> None:
    fake.chat(chat_stream(chat_text_chunks("ok")))
    options = {"openai": {"previousResponseId": "resp_0", "include": ["file_search_call.results"], "nope": True}}

    parts = collect(model(fake), call(provider_options=options))

    label = "is an option of the OpenAI Responses API; OpenAI Chat Completions ignores it"
    assert parts[0]["warnings"] == [
        {"type": "unsupported", "feature": "previousResponseId", "details": f"previousResponseId {label}"},
        {"type": "unsupported", "feature": "include", "details": f"include {label}"},
        {"type": "other", "message": "unknown providerOptions.openai key 'nope' was ignored"},
    ]
    assert not {"previous_response_id", "include", "nope"} & set(fake.last_body(CHAT_PATH))


def test_reasoning_models_drop_sampling_settings_with_warnings(fake: FakeOpenAI) -> None:
    fake.chat(chat_stream(chat_text_chunks("ok")))

    parts = collect(
        model(fake, "o3"), call(temperature=0.5, presence_penalty=0.1, max_output_tokens=50, reasoning="low")
    )

    assert parts[0]["warnings"] == [
        {
            "type": "unsupported",
            "feature": "temperature",
            "details": "temperature is not supported for reasoning models",
        },
        {
            "type": "unsupported",
            "feature": "presencePenalty",
            "details": "presencePenalty is not supported for reasoning models",
        },
    ]
    body = fake.last_body(CHAT_PATH)
    assert (body["reasoning_effort"], body["max_completion_tokens"]) == ("low", 50)
    assert not {"temperature", "presence_penalty", "max_tokens"} & set(body)


# --- files -------------------------------------------------------------------------------------

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
PDF = base64.b64encode(b"%PDF-1.4 fake").decode()


def test_images_by_url_and_data_become_image_url_parts(fake: FakeOpenAI) -> None:
    fake.chat(chat_stream(chat_text_chunks("ok")))
    message = UserModelMessage(
        content=[
            ModelTextPart(text="Which?"),
            ModelFilePart(media_type="image/jpeg", data=UrlFileData(url="https://example.com/a.jpg")),
            ModelFilePart(media_type="image/*", data=DataFileData(data=PNG)),
        ]
    )

    collect(model(fake), call(message))

    assert fake.last_body(CHAT_PATH)["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Which?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            ],
        }
    ]


def test_a_pdf_is_refused_on_chat_completions_before_any_request(fake: FakeOpenAI) -> None:
    pdf = ModelFilePart(media_type="application/pdf", data=DataFileData(data=PDF))

    parts, error = collect_failure(model(fake), call(UserModelMessage(content=[ModelTextPart(text="Read"), pdf])))

    assert parts == []
    assert isinstance(error, UnsupportedCapabilityError)
    assert "gpt-4.1 on OpenAI Chat Completions cannot take application/pdf files" in str(error)
    assert fake.requests == []


# --- faults ------------------------------------------------------------------------------------


def test_429_with_retry_after_ms_is_a_retryable_rate_limit(fake: FakeOpenAI) -> None:
    fake.chat(error_reply(429, "Too many requests", code="rate_limit_exceeded", headers={"retry-after-ms": "1500"}))

    parts, error = collect_failure(model(fake), call())

    assert parts == []
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable, error.retry_after) == ("rate_limit", True, 1.5)
    assert len(fake.requests) == 1


def test_500_is_a_retryable_server_error(fake: FakeOpenAI) -> None:
    fake.chat(error_reply(503, "unavailable"))

    _, error = collect_failure(model(fake), call())

    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable, error.status_code) == ("server", True, 503)


def test_a_connection_dropped_mid_stream_raises_after_the_parts_already_yielded(fake: FakeOpenAI) -> None:
    fake.chat(chat_stream(chat_text_chunks("Hello there"), drop_after=2))

    parts, error = collect_failure(model(fake), call())

    assert [part["type"] for part in parts] == ["stream-start", "response-metadata", "text-start", "text-delta"]
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable) == ("connection", True)


def test_a_stream_without_a_finish_reason_is_a_retryable_error(fake: FakeOpenAI) -> None:
    fake.chat(chat_stream(chat_text_chunks("Hello there")[:2], done=False))

    parts, error = collect_failure(model(fake), call())

    assert parts[-1]["type"] == "text-delta"
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable) == ("connection", True)


def test_a_slow_first_byte_past_the_timeout_is_a_retryable_timeout(fake: FakeOpenAI) -> None:
    fake.chat(chat_stream(chat_text_chunks("late"), delay_before_headers=2.0))

    parts, error = collect_failure(model(fake, timeout=0.3), call())

    assert parts == []
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable) == ("timeout", True)


def test_capabilities_follow_the_model_id() -> None:
    assert OpenAIChatModel("gpt-4o-mini", api_key="unused").capabilities.input_media_types == ("image/*",)
    assert OpenAIChatModel("o3-mini", api_key="unused").capabilities.input_media_types == ()
    assert OpenAIChatModel("gpt-5", api_key="unused").capabilities.reasoning_history is False
