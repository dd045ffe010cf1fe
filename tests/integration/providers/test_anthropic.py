"""The Anthropic adapter driving the real `anthropic` SDK against a local fake of the Messages API.

Every test goes over HTTP to `tests.support.fake_anthropic` on 127.0.0.1: the SDK builds and sends
the request, the fake answers in the API's streaming wire format (or fails on purpose), and the
tests assert both the parts the adapter yields and the exact JSON and headers that reached the wire.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from stepline.llm.anthropic import AnthropicModel
from stepline.llm.base import FunctionTool, ModelCallOptions, ResponseFormat
from stepline.llm.errors import ModelCallError, UnsupportedCapabilityError
from stepline.llm.stream_parts import ModelStreamPart, V4Error, V4Finish, V4ReasoningEnd, V4StreamStart
from stepline.protocol.model_messages import (
    AssistantModelMessage,
    DataFileData,
    ModelFilePart,
    ModelMessage,
    ModelReasoningPart,
    ModelTextPart,
    ProviderOptions,
    SystemModelMessage,
    TextOutput,
    ToolCallPart,
    ToolModelMessage,
    ToolResultPart,
    UrlFileData,
    UserModelMessage,
)
from tests.support.fake_anthropic import (
    ErrorReply,
    FakeAnthropic,
    StreamReply,
    error_event,
    message,
    message_start,
    ping,
    redacted_thinking_block,
    text_block,
    thinking_block,
    tool_use_block,
)

MODEL = "claude-sonnet-4-6"
KEY = "sk-ant-test-0123456789-secret"
CACHE_1H: ProviderOptions = {"anthropic": {"cacheControl": {"type": "ephemeral", "ttl": "1h"}}}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 8).decode()
PDF = base64.b64encode(b"%PDF-1.7\n%fake\n").decode()


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=KEY) as server:
        yield server


def model_for(fake: FakeAnthropic, model_id: str = MODEL, **kwargs: Any) -> AnthropicModel:
    return AnthropicModel(model_id, api_key=KEY, base_url=fake.base_url, **kwargs)


def user(text: str) -> UserModelMessage:
    return UserModelMessage(content=[ModelTextPart(text=text)])


def options(*prompt: ModelMessage, **settings: Any) -> ModelCallOptions:
    return ModelCallOptions(prompt=list(prompt) or [user("Hi")], **settings)


async def _collect(model: AnthropicModel, call: ModelCallOptions, into: list[ModelStreamPart]) -> None:
    try:
        async for part in model.stream(call):
            into.append(part)
    finally:
        await model.aclose()


def run(model: AnthropicModel, call: ModelCallOptions) -> list[ModelStreamPart]:
    parts: list[ModelStreamPart] = []
    asyncio.run(_collect(model, call, parts))
    return parts


def wire(parts: list[ModelStreamPart]) -> list[dict[str, Any]]:
    return [part.to_wire() for part in parts]


def warnings_of(parts: list[ModelStreamPart]) -> list[dict[str, Any]]:
    start = parts[0]
    assert isinstance(start, V4StreamStart)
    return start.warnings


def reasoning_end(parts: list[ModelStreamPart]) -> V4ReasoningEnd:
    return next(part for part in parts if isinstance(part, V4ReasoningEnd))


def run_failing(model: AnthropicModel, call: ModelCallOptions) -> tuple[list[dict[str, Any]], ModelCallError]:
    parts: list[ModelStreamPart] = []
    with pytest.raises(ModelCallError) as caught:
        asyncio.run(_collect(model, call, parts))
    return wire(parts), caught.value


def only_request(fake: FakeAnthropic) -> dict[str, Any]:
    assert len(fake.requests) == 1, "the SDK must not retry on its own (max_retries=0)"
    return fake.requests[0].body


def sent_body(fake: FakeAnthropic, call: ModelCallOptions, model_id: str = MODEL) -> dict[str, Any]:
    """The body of the one request this call sends."""
    before = len(fake.requests)
    fake.reply(StreamReply(message(text_block(0, "ok"))))
    run(model_for(fake, model_id), call)
    assert len(fake.requests) == before + 1
    return fake.requests[-1].body


# --- streaming --------------------------------------------------------------------------------


def test_plain_text_yields_the_whole_part_sequence_and_sends_the_exact_request(fake: FakeAnthropic) -> None:
    fake.reply(StreamReply(message(text_block(0, "Hello", ", world"), output_tokens=5)))

    parts = wire(run(model_for(fake), options(user("Hi"))))

    assert parts == [
        {"type": "stream-start", "warnings": []},
        {"type": "response-metadata", "id": "msg_01", "modelId": MODEL},
        {"type": "text-start", "id": "0"},
        {"type": "text-delta", "id": "0", "delta": "Hello"},
        {"type": "text-delta", "id": "0", "delta": ", world"},
        {"type": "text-end", "id": "0"},
        {
            "type": "finish",
            "usage": {
                "inputTokens": {"total": 25, "noCache": 25, "cacheRead": 0, "cacheWrite": 0},
                "outputTokens": {"total": 5},
                "raw": {
                    "input_tokens": 25,
                    "output_tokens": 5,
                    "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0,
                },
            },
            "finishReason": {"unified": "stop", "raw": "end_turn"},
        },
    ]
    request = fake.requests[0]
    assert request.path == "/v1/messages"
    assert only_request(fake) == {
        "model": MODEL,
        "max_tokens": 8192,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "stream": True,
    }
    assert request.headers["authorization"] == "<redacted>"
    assert request.headers["x-stainless-retry-count"] == "0"
    assert "anthropic-version" in request.headers
    assert "anthropic-beta" not in request.headers


def test_thinking_signature_lands_on_reasoning_end_and_goes_back_unchanged(fake: FakeAnthropic) -> None:
    signature = "EqQBCkYIBxgCKkDsig+/=="
    fake.reply(
        StreamReply(
            message(
                thinking_block(0, "Let me ", "check.", signature=signature),
                tool_use_block(1, "toolu_01", "get_weather", '{"city": ', '"Paris"}'),
                stop_reason="tool_use",
            )
        )
    )
    tools = [FunctionTool(name="get_weather", input_schema={"type": "object"})]
    thinking = {"anthropic": {"thinking": {"type": "enabled", "budgetTokens": 2048}}}

    parts = run(model_for(fake), options(user("Weather?"), tools=tools, provider_options=thinking))

    reasoning = [part.to_wire() for part in parts if part.type.startswith("reasoning")]
    assert reasoning == [
        {"type": "reasoning-start", "id": "0"},
        {"type": "reasoning-delta", "id": "0", "delta": "Let me "},
        {"type": "reasoning-delta", "id": "0", "delta": "check."},
        {"type": "reasoning-end", "id": "0", "providerMetadata": {"anthropic": {"signature": signature}}},
    ]
    end = reasoning_end(parts)

    # The next step sends the turn back: thinking first, with the signature exactly as received.
    turn = AssistantModelMessage(
        content=[
            ModelReasoningPart(text="Let me check.", provider_options=end.provider_metadata),
            ToolCallPart(tool_call_id="toolu_01", tool_name="get_weather", input={"city": "Paris"}),
        ]
    )
    result = ToolModelMessage(
        content=[ToolResultPart(tool_call_id="toolu_01", tool_name="get_weather", output=TextOutput(value="sunny"))]
    )
    fake.reply(StreamReply(message(text_block(0, "Sunny."))))
    run(model_for(fake), options(user("Weather?"), turn, result, tools=tools, provider_options=thinking))

    assert fake.requests[1].body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Let me check.", "signature": signature},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "sunny"}]},
    ]


def test_redacted_thinking_becomes_reasoning_with_its_data_and_round_trips(fake: FakeAnthropic) -> None:
    fake.reply(StreamReply(message(redacted_thinking_block(0, "EmwKAhgBEgy3va3p"), text_block(1, "Done."))))

    parts = run(model_for(fake), options())

    metadata = {"anthropic": {"redactedData": "EmwKAhgBEgy3va3p"}}
    assert wire(parts)[2:4] == [
        {"type": "reasoning-start", "id": "0", "providerMetadata": metadata},
        {"type": "reasoning-end", "id": "0", "providerMetadata": metadata},
    ]
    turn = AssistantModelMessage(
        content=[
            ModelReasoningPart(text="", provider_options=reasoning_end(parts).provider_metadata),
            ModelTextPart(text="Done."),
        ]
    )
    body = sent_body(fake, options(user("Hi"), turn, user("And?")))
    assert body["messages"][1]["content"] == [
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3p"},
        {"type": "text", "text": "Done."},
    ]


def test_a_tool_call_streams_its_json_fragments_and_ends_with_the_accumulated_text(fake: FakeAnthropic) -> None:
    fragments = ['{"ci', 'ty": "Pa', 'ris", "unit"', ': "C"}']
    fake.reply(StreamReply(message(tool_use_block(0, "toolu_01", "get_weather", *fragments), stop_reason="tool_use")))

    parts = wire(run(model_for(fake), options(tools=[FunctionTool(name="get_weather", input_schema={})])))

    assert parts[2:] == [
        {"type": "tool-input-start", "id": "toolu_01", "toolName": "get_weather"},
        *({"type": "tool-input-delta", "id": "toolu_01", "delta": fragment} for fragment in fragments),
        {"type": "tool-input-end", "id": "toolu_01"},
        {
            "type": "tool-call",
            "toolCallId": "toolu_01",
            "toolName": "get_weather",
            "input": '{"city": "Paris", "unit": "C"}',
        },
        {
            "type": "finish",
            "usage": parts[-1]["usage"],
            "finishReason": {"unified": "tool-calls", "raw": "tool_use"},
        },
    ]


def test_two_tool_calls_and_one_without_input(fake: FakeAnthropic) -> None:
    fake.reply(
        StreamReply(
            message(
                text_block(0, "Checking both."),
                tool_use_block(1, "toolu_a", "get_weather", '{"city":"Paris"}'),
                tool_use_block(2, "toolu_b", "get_time"),
                stop_reason="tool_use",
            )
        )
    )

    parts = run(model_for(fake), options())

    calls = [(part.tool_call_id, part.tool_name, part.input) for part in parts if part.type == "tool-call"]
    assert calls == [("toolu_a", "get_weather", '{"city":"Paris"}'), ("toolu_b", "get_time", "{}")]


def test_usage_counts_cache_reads_and_writes_and_leaves_unreported_reasoning_unknown(fake: FakeAnthropic) -> None:
    start = message_start(input_tokens=100, cache_read=2000, cache_write=300)
    fake.reply(StreamReply(message(text_block(0, "ok"), start=start, output_tokens=50)))

    finish = run(model_for(fake), options())[-1]

    assert isinstance(finish, V4Finish)
    assert finish.usage.input_tokens.model_dump() == {
        "total": 2400,
        "no_cache": 100,
        "cache_read": 2000,
        "cache_write": 300,
    }
    assert finish.usage.output_tokens.model_dump() == {"total": 50, "text": None, "reasoning": None}


def test_usage_reports_reasoning_tokens_only_when_the_api_does(fake: FakeAnthropic) -> None:
    details = {"thinking_tokens": 30}
    fake.reply(StreamReply(message(text_block(0, "ok"), output_tokens=50, output_tokens_details=details)))

    finish = run(model_for(fake), options())[-1]

    assert isinstance(finish, V4Finish)
    assert (finish.usage.output_tokens.reasoning, finish.usage.output_tokens.text) == (30, 20)


@pytest.mark.parametrize(
    ("stop_reason", "unified"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool-calls"),
        ("refusal", "content-filter"),
        ("pause_turn", "stop"),
        ("something_new", "other"),
    ],
)
def test_finish_reasons(fake: FakeAnthropic, stop_reason: str, unified: str) -> None:
    fake.reply(StreamReply(message(text_block(0, "ok"), stop_reason=stop_reason)))

    finish = run(model_for(fake), options())[-1].to_wire()

    assert finish["finishReason"] == {"unified": unified, "raw": stop_reason}


def test_a_stop_sequence_is_reported_in_provider_metadata(fake: FakeAnthropic) -> None:
    fake.reply(StreamReply(message(text_block(0, "1, 2"), stop_reason="stop_sequence", stop_sequence="3")))

    finish = run(model_for(fake), options(stop_sequences=["3"]))[-1].to_wire()

    assert finish["providerMetadata"] == {"anthropic": {"stopSequence": "3"}}
    assert only_request(fake)["stop_sequences"] == ["3"]


def test_an_error_event_becomes_an_error_part_and_an_error_finish(fake: FakeAnthropic) -> None:
    events = [message_start(), ping(), *text_block(0, "Hal")[:2], error_event("overloaded_error", "Overloaded")]
    fake.reply(StreamReply(events))

    streamed = run(model_for(fake), options())
    parts = wire(streamed)

    # classified like an HTTP 529: transient, so the loop retries it while nothing is visible yet
    error = streamed[-2]
    assert isinstance(error, V4Error) and isinstance(error.error, ModelCallError)
    assert (error.error.kind, error.error.retryable, error.error.code) == ("overloaded", True, "overloaded_error")
    assert str(error.error) == "Anthropic stream error overloaded_error: Overloaded"
    assert parts[-1:] == [
        {
            "type": "finish",
            "usage": parts[-1]["usage"],
            "finishReason": {"unified": "error", "raw": "overloaded_error"},
        },
    ]


def test_include_raw_chunks_yields_each_event_as_sent(fake: FakeAnthropic) -> None:
    fake.reply(StreamReply(message(text_block(0, "ok"))))

    parts = run(model_for(fake), options(include_raw_chunks=True))

    raw_types = [part.raw_value["type"] for part in parts if part.type == "raw" and isinstance(part.raw_value, dict)]
    assert raw_types[:3] == ["message_start", "ping", "content_block_start"]
    assert raw_types[-1] == "message_stop"


# --- request conversion over the wire ------------------------------------------------------------


def test_cache_control_reaches_system_blocks_messages_and_tools(fake: FakeAnthropic) -> None:
    call = options(
        SystemModelMessage(content="Stable rules.", provider_options=CACHE_1H),
        SystemModelMessage(content="Today's page."),
        UserModelMessage(content=[ModelTextPart(text="Hi")], provider_options=CACHE_1H),
        tools=[FunctionTool(name="lookup", input_schema={"type": "object"}, provider_options=CACHE_1H)],
    )

    body = sent_body(fake, call)

    cache = {"type": "ephemeral", "ttl": "1h"}
    assert body["system"] == [
        {"type": "text", "text": "Stable rules.", "cache_control": cache},
        {"type": "text", "text": "Today's page."},
    ]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi", "cache_control": cache}]}]
    assert body["tools"] == [
        {"name": "lookup", "input_schema": {"type": "object"}, "cache_control": cache, "eager_input_streaming": True}
    ]


def test_one_system_message_without_cache_control_is_sent_as_a_string(fake: FakeAnthropic) -> None:
    body = sent_body(fake, options(SystemModelMessage(content="Be brief."), user("Hi")))

    assert body["system"] == "Be brief."


PROVIDER_OPTION_CASES: list[tuple[str, Any, dict[str, Any], str | None]] = [
    ("sendReasoning", False, {}, None),
    ("structuredOutputMode", "outputFormat", {}, None),
    (
        "thinking",
        {"type": "adaptive", "display": "summarized"},
        {"thinking": {"type": "adaptive", "display": "summarized"}},
        None,
    ),
    ("disableParallelToolUse", True, {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}, None),
    ("cacheControl", {"type": "ephemeral", "ttl": "5m"}, {"cache_control": {"type": "ephemeral", "ttl": "5m"}}, None),
    ("metadata", {"userId": "user-7f3a"}, {"metadata": {"user_id": "user-7f3a"}}, None),
    (
        "mcpServers",
        [
            {
                "type": "url",
                "name": "docs",
                "url": "https://mcp.example.com/sse",
                "authorizationToken": "mcp-token",
                "toolConfiguration": {"enabled": True, "allowedTools": ["search"]},
            }
        ],
        {
            "mcp_servers": [
                {
                    "type": "url",
                    "name": "docs",
                    "url": "https://mcp.example.com/sse",
                    "authorization_token": "mcp-token",
                    "tool_configuration": {"enabled": True, "allowed_tools": ["search"]},
                }
            ]
        },
        "mcp-client-2025-04-04",
    ),
    (
        "container",
        {"id": "container_1", "skills": [{"type": "anthropic", "skillId": "pptx", "version": "latest"}]},
        {
            "container": {
                "id": "container_1",
                "skills": [{"type": "anthropic", "skill_id": "pptx", "version": "latest"}],
            }
        },
        "code-execution-2025-08-25,skills-2025-10-02,files-api-2025-04-14",
    ),
    ("toolStreaming", False, {"tools": [{"name": "lookup", "input_schema": {"type": "object"}}]}, None),
    ("effort", "low", {"output_config": {"effort": "low"}}, None),
    (
        "taskBudget",
        {"type": "tokens", "total": 50000, "remaining": 20000},
        {"output_config": {"task_budget": {"type": "tokens", "total": 50000, "remaining": 20000}}},
        "task-budgets-2026-03-13",
    ),
    ("speed", "fast", {"speed": "fast"}, "fast-mode-2026-02-01"),
    ("inferenceGeo", "us", {"inference_geo": "us"}, None),
    ("fallbacks", "default", {"fallbacks": "default"}, "server-side-fallback-2026-07-01"),
    ("anthropicBeta", ["beta-one-2026-01-01", "beta-two"], {}, "beta-one-2026-01-01,beta-two"),
    (
        "contextManagement",
        {
            "edits": [
                {
                    "type": "clear_tool_uses_20250919",
                    "trigger": {"type": "input_tokens", "value": 30000},
                    "keep": {"type": "tool_uses", "value": 3},
                    "clearAtLeast": {"type": "input_tokens", "value": 5000},
                    "clearToolInputs": True,
                    "excludeTools": ["memory"],
                },
                {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
                {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 100000}},
            ]
        },
        {
            "context_management": {
                "edits": [
                    {
                        "type": "clear_tool_uses_20250919",
                        "trigger": {"type": "input_tokens", "value": 30000},
                        "keep": {"type": "tool_uses", "value": 3},
                        "clear_at_least": {"type": "input_tokens", "value": 5000},
                        "clear_tool_inputs": True,
                        "exclude_tools": ["memory"],
                    },
                    {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
                    {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 100000}},
                ]
            }
        },
        "context-management-2025-06-27,compact-2026-01-12",
    ),
]


@pytest.mark.parametrize(
    ("key", "value", "expected_fields", "expected_beta"),
    PROVIDER_OPTION_CASES,
    ids=[c[0] for c in PROVIDER_OPTION_CASES],
)
def test_every_provider_option_reaches_its_request_field_or_header(
    fake: FakeAnthropic, key: str, value: Any, expected_fields: dict[str, Any], expected_beta: str | None
) -> None:
    # Each key acts on a request that has what it needs: a tool, an answer schema, past reasoning.
    reasoning: ProviderOptions = {"anthropic": {"signature": "sig"}}
    turn = AssistantModelMessage(
        content=[ModelReasoningPart(text="thought", provider_options=reasoning), ModelTextPart(text="Hello")]
    )
    call = options(
        user("Hi"),
        turn,
        user("Go on"),
        tools=[FunctionTool(name="lookup", input_schema={"type": "object"})],
        response_format=ResponseFormat(schema={"type": "object"}) if key == "structuredOutputMode" else None,
        provider_options={"anthropic": {key: value}},
    )
    fake.reply(StreamReply(message(text_block(0, "ok"))))

    parts = run(model_for(fake), call)

    body, headers = only_request(fake), fake.requests[0].headers
    for field, expected in expected_fields.items():
        assert body[field] == expected
    assert headers.get("anthropic-beta") == expected_beta
    if key == "sendReasoning":  # the past reasoning stays home
        assert body["messages"][1]["content"] == [{"type": "text", "text": "Hello"}]
        assert warnings_of(parts) == [
            {"type": "other", "message": "prompt.1.content.0: reasoning was not sent (sendReasoning is false)"}
        ]
    if key == "structuredOutputMode":
        assert body["output_config"] == {"format": {"type": "json_schema", "schema": {"type": "object"}}}


def test_every_key_of_the_spec_table_is_covered() -> None:
    spec_keys = {
        "sendReasoning",
        "structuredOutputMode",
        "thinking",
        "disableParallelToolUse",
        "cacheControl",
        "metadata",
        "mcpServers",
        "container",
        "toolStreaming",
        "effort",
        "taskBudget",
        "speed",
        "inferenceGeo",
        "fallbacks",
        "anthropicBeta",
        "contextManagement",
    }
    assert {case[0] for case in PROVIDER_OPTION_CASES} == spec_keys


def test_an_unknown_provider_option_is_a_warning_and_is_not_sent(fake: FakeAnthropic) -> None:
    call = options(provider_options={"anthropic": {"effort": "high", "reasoningEffrot": "max", "speed": "standard"}})
    fake.reply(StreamReply(message(text_block(0, "ok"))))

    parts = run(model_for(fake), call)

    assert parts[0].to_wire() == {
        "type": "stream-start",
        "warnings": [
            {
                "type": "unsupported",
                "feature": "providerOptions.anthropic.reasoningEffrot",
                "details": "unknown Anthropic provider option; it was not sent",
            }
        ],
    }
    body = only_request(fake)
    assert (body["output_config"], body["speed"]) == ({"effort": "high"}, "standard")
    assert "reasoningEffrot" not in str(body)


def test_an_invalid_provider_option_fails_before_any_request_without_echoing_the_value(fake: FakeAnthropic) -> None:
    servers = [{"type": "url", "name": "x", "url": "https://mcp.example.com", "authorizationToken": 12345}]
    call = options(provider_options={"anthropic": {"mcpServers": servers}})

    _, error = run_failing(model_for(fake), call)

    assert (error.kind, error.retryable) == ("bad_request", False)
    assert "providerOptions.anthropic.mcpServers.0.authorizationToken" in str(error)
    assert "12345" not in str(error)
    assert fake.requests == []


# --- thinking budget rules ----------------------------------------------------------------------


def test_thinking_budget_is_added_to_max_tokens_and_sampling_settings_are_dropped(fake: FakeAnthropic) -> None:
    call = options(
        max_output_tokens=1000,
        temperature=0.3,
        top_k=5,
        provider_options={"anthropic": {"thinking": {"type": "enabled", "budgetTokens": 4000}}},
    )
    fake.reply(StreamReply(message(text_block(0, "ok"))))

    parts = run(model_for(fake), call)

    body = only_request(fake)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert body["max_tokens"] == 5000  # the budget must stay below max_tokens
    assert "temperature" not in body and "top_k" not in body
    features = [warning["feature"] for warning in warnings_of(parts)]
    assert features == ["temperature", "top_k"]


@pytest.mark.parametrize(("budget", "detail"), [(None, "not given"), (500, "500 is under the minimum")])
def test_a_missing_or_too_small_thinking_budget_becomes_1024_with_a_warning(
    fake: FakeAnthropic, budget: int | None, detail: str
) -> None:
    thinking: dict[str, Any] = {"type": "enabled"} | ({"budgetTokens": budget} if budget is not None else {})
    fake.reply(StreamReply(message(text_block(0, "ok"))))

    parts = run(model_for(fake, max_tokens=2000), options(provider_options={"anthropic": {"thinking": thinking}}))

    assert only_request(fake)["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert only_request(fake)["max_tokens"] == 3024
    assert warnings_of(parts) == [
        {
            "type": "compatibility",
            "feature": "extended thinking",
            "details": f"thinking budget {detail}; 1024 tokens were used",
        }
    ]


def test_thinking_disabled_is_sent_and_keeps_temperature(fake: FakeAnthropic) -> None:
    call = options(temperature=0.2, provider_options={"anthropic": {"thinking": {"type": "disabled"}}})

    body = sent_body(fake, call)

    assert (body["thinking"], body["temperature"], body["max_tokens"]) == ({"type": "disabled"}, 0.2, 8192)


# --- file inputs --------------------------------------------------------------------------------


def test_images_by_data_and_url_and_a_pdf_become_image_and_document_blocks(fake: FakeAnthropic) -> None:
    prompt = UserModelMessage(
        content=[
            ModelTextPart(text="Compare these."),
            ModelFilePart(media_type="image/png", data=DataFileData(data=PNG)),
            ModelFilePart(media_type="image/*", data=UrlFileData(url="https://example.com/cat.jpg")),
            ModelFilePart(media_type="image/*", data=UrlFileData(url=f"data:image/png;base64,{PNG}")),
            ModelFilePart(media_type="application/pdf", data=DataFileData(data=PDF), filename="report.pdf"),
        ]
    )

    body = sent_body(fake, options(prompt))

    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "Compare these."},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
            "title": "report.pdf",
        },
    ]


@pytest.mark.parametrize(
    ("model_id", "media_type"),
    [(MODEL, "audio/mpeg"), (MODEL, "image/tiff"), ("claude-3-haiku-20240307", "application/pdf")],
)
def test_a_file_the_model_cannot_take_raises_before_any_request(
    fake: FakeAnthropic, model_id: str, media_type: str
) -> None:
    prompt = UserModelMessage(content=[ModelFilePart(media_type=media_type, data=DataFileData(data="AAAA"))])

    with pytest.raises(UnsupportedCapabilityError) as caught:
        run(model_for(fake, model_id), options(prompt))

    assert f"cannot take a {media_type} file" in str(caught.value)
    assert (caught.value.provider, caught.value.model_id) == ("anthropic", model_id)
    assert fake.requests == []


def test_capabilities_follow_the_model_generation() -> None:
    assert AnthropicModel(MODEL, api_key=KEY).capabilities.accepts("application/pdf")
    assert AnthropicModel("claude-3-5-sonnet-20241022", api_key=KEY).capabilities.accepts("application/pdf")
    assert not AnthropicModel("claude-3-haiku-20240307", api_key=KEY).capabilities.accepts("application/pdf")
    assert AnthropicModel("claude-3-haiku-20240307", api_key=KEY).capabilities.accepts("image/png")
    assert AnthropicModel(MODEL, api_key=KEY).capabilities.reasoning_history


# --- faults -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "retry_after"), [({"retry-after": "7"}, 7.0), ({"retry-after-ms": "1500", "retry-after": "2"}, 1.5)]
)
def test_429_is_a_retryable_rate_limit_with_retry_after(
    fake: FakeAnthropic, headers: dict[str, str], retry_after: float
) -> None:
    fake.reply(ErrorReply(429, "rate_limit_error", "Number of request tokens has exceeded your limit.", headers))

    parts, error = run_failing(model_for(fake), options())

    assert parts == []
    assert (error.kind, error.retryable, error.retry_after, error.status_code) == ("rate_limit", True, retry_after, 429)
    assert (
        str(error)
        == "Anthropic returned HTTP 429 (rate_limit_error: Number of request tokens has exceeded your limit.)"
    )
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("status", "error_type", "kind", "retryable"),
    [
        (529, "overloaded_error", "overloaded", True),
        (500, "api_error", "server", True),
        (400, "invalid_request_error", "bad_request", False),
    ],
)
def test_status_errors_before_any_output_are_classified(
    fake: FakeAnthropic, status: int, error_type: str, kind: str, retryable: bool
) -> None:
    fake.reply(ErrorReply(status, error_type, "nope"))

    parts, error = run_failing(model_for(fake), options())

    assert parts == []
    assert (error.kind, error.retryable, error.status_code, error.provider) == (kind, retryable, status, "anthropic")
    assert len(fake.requests) == 1, "the SDK must not retry on its own"


def test_a_wrong_key_is_an_auth_error_that_does_not_reveal_the_key(fake: FakeAnthropic) -> None:
    model = AnthropicModel(MODEL, api_key="sk-ant-wrong-key-987", base_url=fake.base_url)

    _, error = run_failing(model, options())

    assert (error.kind, error.retryable, error.status_code) == ("auth", False, 401)
    assert "sk-ant-wrong-key-987" not in str(error) and "sk-ant-wrong-key-987" not in repr(model)


@pytest.mark.parametrize(("reset", "transport_error"), [(False, httpx2.RemoteProtocolError), (True, httpx2.ReadError)])
def test_a_stream_dropped_midway_is_a_retryable_connection_error_after_the_parts_so_far(
    fake: FakeAnthropic, reset: bool, transport_error: type[Exception]
) -> None:
    fake.reply(StreamReply(message(text_block(0, "Hel", "lo")), drop_after=4, reset=reset))

    parts, error = run_failing(model_for(fake), options())

    assert parts == [
        {"type": "stream-start", "warnings": []},
        {"type": "response-metadata", "id": "msg_01", "modelId": MODEL},
        {"type": "text-start", "id": "0"},
        {"type": "text-delta", "id": "0", "delta": "Hel"},
    ]
    assert (error.kind, error.retryable, error.status_code) == ("connection", True, None)
    # anthropic 2.14 lets the transport error itself through; the adapter still classifies it.
    assert isinstance(error.__cause__, transport_error)
    assert KEY not in str(error)


def test_a_stream_that_ends_cleanly_before_message_stop_is_not_a_finish(fake: FakeAnthropic) -> None:
    fake.reply(StreamReply(message(text_block(0, "Hello"))[:-2]))

    parts, error = run_failing(model_for(fake), options())

    assert [part["type"] for part in parts][-1] == "text-end"
    assert (error.kind, error.retryable) == ("connection", True)


def test_a_slow_first_byte_past_the_timeout_is_a_retryable_timeout(fake: FakeAnthropic) -> None:
    fake.reply(StreamReply(message(text_block(0, "late")), first_byte_delay=5.0))

    parts, error = run_failing(model_for(fake, timeout=0.2), options())

    assert parts == []
    assert (error.kind, error.retryable) == ("timeout", True)


def test_caller_headers_pass_through_and_betas_merge_into_one_header(fake: FakeAnthropic) -> None:
    call = options(
        headers={"x-trace-id": "trace-1", "anthropic-beta": "caller-beta-2026-01-01"},
        provider_options={"anthropic": {"speed": "fast"}},
    )

    sent_body(fake, call)

    headers = fake.requests[0].headers
    assert headers["x-trace-id"] == "trace-1"
    assert headers["anthropic-beta"] == "fast-mode-2026-02-01,caller-beta-2026-01-01"


# --- credentials and endpoint -----------------------------------------------------------------


def test_key_and_endpoint_come_from_the_environment(fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    fake.reply(StreamReply(message(text_block(0, "from env"))))

    parts = run(AnthropicModel(MODEL), options())

    assert parts[-1].type == "finish" and len(fake.requests) == 1
