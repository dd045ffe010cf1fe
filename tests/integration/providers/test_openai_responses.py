"""OpenAIResponsesModel through the real `openai` SDK against the local wire-format server."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from stepline.llm.base import FunctionTool, ModelCallOptions, ResponseFormat
from stepline.llm.errors import ModelCallError, UnsupportedCapabilityError
from stepline.llm.openai import OpenAIResponsesModel
from stepline.llm.openai.options import RESPONSES_OPTION_KEYS
from stepline.protocol.model_messages import (
    AssistantModelMessage,
    DataFileData,
    JsonOutput,
    ModelFilePart,
    ModelMessage,
    ModelReasoningPart,
    ModelTextPart,
    SystemModelMessage,
    TextOutput,
    ToolCallPart,
    ToolModelMessage,
    ToolResultPart,
    UrlFileData,
    UserModelMessage,
)
from tests.support.fake_openai import (
    API_KEY,
    RESPONSES_PATH,
    FakeOpenAI,
    Reply,
    collect,
    collect_failure,
    error_reply,
    responses_stream,
    responses_text_events,
)

CREATED = 1_700_000_000


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server
        server.assert_all_consumed()


def model(fake: FakeOpenAI, model_id: str = "gpt-4.1", **kwargs: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(model_id, base_url=fake.base_url, api_key=API_KEY, **kwargs)


def user(text: str) -> UserModelMessage:
    return UserModelMessage(content=[ModelTextPart(text=text)])


def call(*messages: ModelMessage, **kwargs: Any) -> ModelCallOptions:
    return ModelCallOptions(prompt=list(messages) or [user("Hi")], **kwargs)


# --- event builders (the shapes OpenAI streams) --------------------------------------------------


def response(status: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": CREATED,
        "model": "gpt-5-mini",
        "status": status,
        **fields,
    }


def created() -> dict[str, Any]:
    return {"type": "response.created", "response": response("in_progress", output=[])}


def completed(usage: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {"type": "response.completed", "response": response("completed", usage=usage, **fields)}


def reasoning_events(item_id: str, summaries: list[list[str]], encrypted: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": item_id, "type": "reasoning", "summary": [], "encrypted_content": None},
        }
    ]
    for index, deltas in enumerate(summaries):
        base = {"item_id": item_id, "output_index": 0, "summary_index": index}
        events.append(
            {"type": "response.reasoning_summary_part.added", **base, "part": {"type": "summary_text", "text": ""}}
        )
        events.extend({"type": "response.reasoning_summary_text.delta", **base, "delta": delta} for delta in deltas)
        events.append({"type": "response.reasoning_summary_text.done", **base, "text": "".join(deltas)})
    summary = [{"type": "summary_text", "text": "".join(deltas)} for deltas in summaries]
    done_item = {"id": item_id, "type": "reasoning", "summary": summary, "encrypted_content": encrypted}
    events.append({"type": "response.output_item.done", "output_index": 0, "item": done_item})
    return events


def function_call_events(
    output_index: int, item_id: str, call_id: str, name: str, fragments: list[str]
) -> list[dict[str, Any]]:
    item = {"id": item_id, "type": "function_call", "status": "in_progress", "call_id": call_id, "name": name}
    base = {"item_id": item_id, "output_index": output_index}
    arguments = "".join(fragments)
    return [
        {"type": "response.output_item.added", "output_index": output_index, "item": {**item, "arguments": ""}},
        *({"type": "response.function_call_arguments.delta", **base, "delta": fragment} for fragment in fragments),
        {"type": "response.function_call_arguments.done", **base, "arguments": arguments},
        {
            "type": "response.output_item.done",
            "output_index": output_index,
            "item": {**item, "status": "completed", "arguments": arguments},
        },
    ]


FULL_USAGE = {
    "input_tokens": 120,
    "input_tokens_details": {"cached_tokens": 100},
    "output_tokens": 40,
    "output_tokens_details": {"reasoning_tokens": 30},
    "total_tokens": 160,
}


# --- streaming ---------------------------------------------------------------------------------


def test_plain_text_streams_as_the_sdk_parts_and_sends_the_prompt(fake: FakeOpenAI) -> None:
    fake.responses(responses_stream(responses_text_events("Hello there")))

    parts = collect(model(fake), call(SystemModelMessage(content="Be brief."), user("Hi"), headers={"x-trace": "t1"}))

    item = {"openai": {"itemId": "msg_1"}}
    assert parts == [
        {"type": "stream-start", "warnings": []},
        {"type": "response-metadata", "id": "resp_1", "modelId": "gpt-4.1", "timestamp": "2023-11-14T22:13:20Z"},
        {"type": "text-start", "id": "msg_1", "providerMetadata": item},
        {"type": "text-delta", "id": "msg_1", "delta": "Hello"},
        {"type": "text-delta", "id": "msg_1", "delta": " there"},
        {"type": "text-end", "id": "msg_1", "providerMetadata": item},
        {
            "type": "finish",
            "usage": {
                "inputTokens": {"total": 12, "noCache": 12, "cacheRead": 0},
                "outputTokens": {"total": 3, "text": 3, "reasoning": 0},
                "raw": {
                    "input_tokens": 12,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 3,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 15,
                },
            },
            "finishReason": {"unified": "stop"},  # no raw reason: absent, as in the SDK
            "providerMetadata": {"openai": {"responseId": "resp_1"}},
        },
    ]
    [request] = fake.requests
    assert request.path == RESPONSES_PATH
    assert request.body == {
        "model": "gpt-4.1",
        "stream": True,
        "input": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        ],
    }
    assert request.auth_ok
    assert request.headers["authorization"] == "Bearer [redacted]"
    assert request.headers["x-trace"] == "t1"


def test_reasoning_summary_and_encrypted_content_round_trip(fake: FakeOpenAI) -> None:
    events = [
        created(),
        *reasoning_events("rs_1", [["Think", "ing."], ["Done."]], encrypted="enc-abc"),
        *responses_text_events("42", model="gpt-5-mini")[2:-1],
        completed(FULL_USAGE),
    ]
    fake.responses(responses_stream(events))
    options = {"openai": {"store": False, "reasoningSummary": "auto"}}

    parts = collect(model(fake, "gpt-5-mini"), call(user("6*7?"), provider_options=options))

    reasoning = [part for part in parts if part["type"].startswith("reasoning")]
    pending = {"openai": {"itemId": "rs_1", "reasoningEncryptedContent": None}}
    final = {"openai": {"itemId": "rs_1", "reasoningEncryptedContent": "enc-abc"}}
    assert reasoning == [
        {"type": "reasoning-start", "id": "rs_1:0", "providerMetadata": pending},
        {"type": "reasoning-delta", "id": "rs_1:0", "delta": "Think"},
        {"type": "reasoning-delta", "id": "rs_1:0", "delta": "ing."},
        {"type": "reasoning-end", "id": "rs_1:0", "providerMetadata": pending},
        {"type": "reasoning-start", "id": "rs_1:1", "providerMetadata": pending},
        {"type": "reasoning-delta", "id": "rs_1:1", "delta": "Done."},
        {"type": "reasoning-end", "id": "rs_1:1", "providerMetadata": final},
    ]
    first = fake.last_body(RESPONSES_PATH)
    assert first["include"] == ["reasoning.encrypted_content"]
    assert first["reasoning"] == {"summary": "auto"}

    # The next turn sends the reasoning back, as the UI message's parts carry it (metadata -> options).
    history = AssistantModelMessage(
        content=[
            ModelReasoningPart(text="Thinking.", provider_options=pending),
            ModelReasoningPart(text="Done.", provider_options=final),
            ModelTextPart(text="42", provider_options={"openai": {"itemId": "msg_1"}}),
        ]
    )
    fake.responses(responses_stream(responses_text_events("ok")))
    collect(model(fake, "gpt-5-mini"), call(user("6*7?"), history, user("thanks"), provider_options=options))

    second = fake.last_body(RESPONSES_PATH)
    assert second["input"][1:3] == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "encrypted_content": "enc-abc",
            "summary": [{"type": "summary_text", "text": "Thinking."}, {"type": "summary_text", "text": "Done."}],
        },
        {"role": "assistant", "content": [{"type": "output_text", "text": "42"}], "id": "msg_1"},
    ]


def test_a_tool_call_streams_its_arguments_and_ends_with_tool_calls(fake: FakeOpenAI) -> None:
    events = [created(), *function_call_events(0, "fc_1", "call_1", "weather", ['{"city"', ':"Paris"}']), completed()]
    fake.responses(responses_stream(events))
    tool = FunctionTool(
        name="weather",
        description="Weather by city",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        strict=True,
    )

    parts = collect(model(fake), call(tools=[tool], tool_choice={"type": "tool", "toolName": "weather"}))

    assert parts[2:] == [
        {"type": "tool-input-start", "id": "call_1", "toolName": "weather"},
        {"type": "tool-input-delta", "id": "call_1", "delta": '{"city"'},
        {"type": "tool-input-delta", "id": "call_1", "delta": ':"Paris"}'},
        {"type": "tool-input-end", "id": "call_1"},
        {
            "type": "tool-call",
            "toolCallId": "call_1",
            "toolName": "weather",
            "input": '{"city":"Paris"}',
            "providerMetadata": {"openai": {"itemId": "fc_1"}},
        },
        {
            "type": "finish",
            "usage": {"inputTokens": {}, "outputTokens": {}},
            "finishReason": {"unified": "tool-calls"},
            "providerMetadata": {"openai": {"responseId": "resp_1"}},
        },
    ]
    body = fake.last_body(RESPONSES_PATH)
    assert body["tools"] == [
        {
            "type": "function",
            "name": "weather",
            "description": "Weather by city",
            "parameters": tool.input_schema,
            "strict": True,
        }
    ]
    assert body["tool_choice"] == {"type": "function", "name": "weather"}


def test_parallel_tool_calls_and_their_results_round_trip(fake: FakeOpenAI) -> None:
    events = [
        created(),
        *function_call_events(0, "fc_1", "call_a", "add", ['{"a":1,', '"b":2}']),
        *function_call_events(1, "fc_2", "call_b", "add", ['{"a":3,"b":4}']),
        completed(),
    ]
    fake.responses(responses_stream(events))

    parts = collect(model(fake), call())

    calls = [part for part in parts if part["type"] == "tool-call"]
    assert [(part["toolCallId"], part["input"]) for part in calls] == [
        ("call_a", '{"a":1,"b":2}'),
        ("call_b", '{"a":3,"b":4}'),
    ]
    assert parts[-1]["finishReason"] == {"unified": "tool-calls"}

    history = [
        user("add twice"),
        AssistantModelMessage(
            content=[
                ToolCallPart(tool_call_id="call_a", tool_name="add", input={"a": 1, "b": 2}),
                ToolCallPart(tool_call_id="call_b", tool_name="add", input={"a": 3, "b": 4}),
            ]
        ),
        ToolModelMessage(
            content=[
                ToolResultPart(tool_call_id="call_a", tool_name="add", output=JsonOutput(value=3)),
                ToolResultPart(tool_call_id="call_b", tool_name="add", output=TextOutput(value="7")),
            ]
        ),
    ]
    fake.responses(responses_stream(responses_text_events("3 and 7")))
    collect(model(fake), call(*history))
    assert fake.last_body(RESPONSES_PATH)["input"][1:] == [
        {"type": "function_call", "call_id": "call_a", "name": "add", "arguments": '{"a":1,"b":2}'},
        {"type": "function_call", "call_id": "call_b", "name": "add", "arguments": '{"a":3,"b":4}'},
        {"type": "function_call_output", "call_id": "call_a", "output": "3"},
        {"type": "function_call_output", "call_id": "call_b", "output": "7"},
    ]


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            FULL_USAGE,
            {
                "inputTokens": {"total": 120, "noCache": 20, "cacheRead": 100},
                "outputTokens": {"total": 40, "text": 10, "reasoning": 30},
            },
        ),
        (
            {"input_tokens": 7, "output_tokens": 5, "total_tokens": 12},
            {
                # Unknown counts are absent (None), never 0.
                "inputTokens": {"total": 7},
                "outputTokens": {"total": 5},
            },
        ),
    ],
    ids=["all-details", "details-absent"],
)
def test_usage_maps_details_and_leaves_absent_counts_none(
    fake: FakeOpenAI, usage: dict[str, Any], expected: dict[str, Any]
) -> None:
    fake.responses(responses_stream([created(), completed(usage)]))

    finish = collect(model(fake), call())[-1]

    assert {key: finish["usage"][key] for key in expected} == expected
    assert finish["usage"]["raw"] == usage


@pytest.mark.parametrize(
    ("terminal", "unified", "raw"),
    [
        ({"type": "response.completed", "response": response("completed")}, "stop", None),
        (
            {
                "type": "response.incomplete",
                "response": response("incomplete", incomplete_details={"reason": "max_output_tokens"}),
            },
            "length",
            "max_output_tokens",
        ),
        (
            {
                "type": "response.incomplete",
                "response": response("incomplete", incomplete_details={"reason": "content_filter"}),
            },
            "content-filter",
            "content_filter",
        ),
    ],
    ids=["completed", "max-output-tokens", "content-filter"],
)
def test_finish_reasons(fake: FakeOpenAI, terminal: dict[str, Any], unified: str, raw: str | None) -> None:
    fake.responses(responses_stream([created(), terminal]))

    parts = collect(model(fake), call(max_output_tokens=5))

    assert [part["type"] for part in parts] == ["stream-start", "response-metadata", "finish"]
    assert parts[-1]["finishReason"] == ({"unified": unified, "raw": raw} if raw is not None else {"unified": unified})
    assert fake.last_body(RESPONSES_PATH)["max_output_tokens"] == 5


def test_a_failed_response_is_an_error_part_and_an_error_finish(fake: FakeOpenAI) -> None:
    failed = response("failed", error={"code": "server_error", "message": "The model crashed"})
    fake.responses(responses_stream([created(), {"type": "response.failed", "response": failed}]))

    parts = collect(model(fake), call())

    assert [part["type"] for part in parts] == ["stream-start", "response-metadata", "error", "finish"]
    error = parts[2]["error"]
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable) == ("server", True)
    assert str(error) == "OpenAI Responses stream error server_error: The model crashed"
    assert parts[-1]["finishReason"] == {"unified": "error", "raw": "server_error"}


@pytest.mark.parametrize(
    ("error_event", "kind", "retryable", "message"),
    [
        (
            {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None},
            "rate_limit",
            True,
            "OpenAI Responses stream error rate_limit_exceeded: slow down",
        ),
        (
            {
                "type": "error",
                "error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": "no credit"},
            },
            "rate_limit",
            False,
            "OpenAI Responses stream error insufficient_quota: no credit",
        ),
    ],
    ids=["flat-frame", "nested-frame-the-sdk-raises"],
)
def test_an_error_event_becomes_a_classified_error_part(
    fake: FakeOpenAI, error_event: dict[str, Any], kind: str, retryable: bool, message: str
) -> None:
    fake.responses(responses_stream([created(), error_event]))

    parts = collect(model(fake), call())

    assert [part["type"] for part in parts] == ["stream-start", "response-metadata", "error", "finish"]
    error = parts[2]["error"]
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable, str(error)) == (kind, retryable, message)
    assert parts[-1]["finishReason"]["unified"] == "error"


def test_raw_chunks_are_included_on_request(fake: FakeOpenAI) -> None:
    events = responses_text_events("ab")
    fake.responses(responses_stream(events))

    parts = collect(model(fake), call(include_raw_chunks=True))

    raws = [part["rawValue"] for part in parts if part["type"] == "raw"]
    assert [raw["type"] for raw in raws] == [event["type"] for event in events]
    assert [raw["sequence_number"] for raw in raws] == list(range(len(events)))


# --- providerOptions ---------------------------------------------------------------------------

CSV = base64.b64encode(b"a,b\n1,2\n").decode()
Read = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class KeyCase:
    """One providerOptions key: the request field it must set, read from the recorded body."""

    key: str
    value: Any
    read: Read
    expected: Any
    model_id: str = "gpt-4.1"
    prompt: list[ModelMessage] = field(default_factory=lambda: [SystemModelMessage(content="Rules."), user("Hi")])
    call_settings: dict[str, Any] = field(default_factory=dict[str, Any])


def body_field(name: str) -> Read:
    return lambda body: body.get(name)


CSV_FILE = ModelFilePart(media_type="text/csv", data=DataFileData(data=CSV), filename="t.csv")

RESPONSES_KEY_CASES = [
    KeyCase("conversation", "conv_1", body_field("conversation"), "conv_1"),
    KeyCase("include", ["file_search_call.results"], body_field("include"), ["file_search_call.results"]),
    KeyCase("instructions", "Speak French.", body_field("instructions"), "Speak French."),
    KeyCase(
        "logprobs",
        3,
        lambda body: (body.get("top_logprobs"), body.get("include")),
        (3, ["message.output_text.logprobs"]),
    ),
    KeyCase("maxToolCalls", 4, body_field("max_tool_calls"), 4),
    KeyCase("metadata", {"run": "r1"}, body_field("metadata"), {"run": "r1"}),
    KeyCase("parallelToolCalls", False, body_field("parallel_tool_calls"), False),
    KeyCase("previousResponseId", "resp_0", body_field("previous_response_id"), "resp_0"),
    KeyCase("promptCacheKey", "chat-42", body_field("prompt_cache_key"), "chat-42"),
    KeyCase(
        "promptCacheOptions",
        {"mode": "explicit", "ttl": "30m"},
        body_field("prompt_cache_options"),
        {"mode": "explicit", "ttl": "30m"},
    ),
    KeyCase("promptCacheRetention", "24h", body_field("prompt_cache_retention"), "24h"),
    KeyCase("reasoningEffort", "low", body_field("reasoning"), {"effort": "low", "summary": "detailed"}, "gpt-5-mini"),
    KeyCase("reasoningMode", "pro", body_field("reasoning"), {"mode": "pro"}, "gpt-5.6"),
    KeyCase("reasoningContext", "all_turns", body_field("reasoning"), {"context": "all_turns"}, "gpt-5.6"),
    KeyCase("reasoningSummary", "concise", body_field("reasoning"), {"summary": "concise"}, "gpt-5-mini"),
    KeyCase("safetyIdentifier", "user-hash", body_field("safety_identifier"), "user-hash"),
    KeyCase("serviceTier", "flex", body_field("service_tier"), "flex", "gpt-5-mini"),
    KeyCase("store", False, body_field("store"), False),
    KeyCase(
        "passThroughUnsupportedFiles",
        True,
        lambda body: body["input"][0]["content"][1],
        {"type": "input_file", "filename": "t.csv", "file_data": f"data:text/csv;base64,{CSV}"},
        prompt=[UserModelMessage(content=[ModelTextPart(text="Sum it"), CSV_FILE])],
    ),
    KeyCase(
        "strictJsonSchema",
        False,
        lambda body: body["text"]["format"],
        {"type": "json_schema", "strict": False, "name": "response", "schema": {"type": "object"}},
        call_settings={"response_format": ResponseFormat(schema={"type": "object"})},
    ),
    KeyCase("textVerbosity", "low", body_field("text"), {"verbosity": "low"}),
    KeyCase("truncation", "auto", body_field("truncation"), "auto"),
    KeyCase("user", "u-1", body_field("user"), "u-1"),
    KeyCase(
        "systemMessageMode", "developer", lambda body: body["input"][0], {"role": "developer", "content": "Rules."}
    ),
    KeyCase(
        "forceReasoning",
        True,
        lambda body: (body["input"][0]["role"], body.get("reasoning")),
        ("developer", {"effort": "high", "summary": "detailed"}),
        "my-proxy-model",
        call_settings={"reasoning": "high"},
    ),
    KeyCase(
        "contextManagement",
        [{"type": "compaction", "compactThreshold": 50_000}],
        body_field("context_management"),
        [{"type": "compaction", "compact_threshold": 50_000}],
    ),
    KeyCase("compactionTrigger", True, lambda body: body["input"][-1], {"type": "compaction_trigger"}),
    KeyCase(
        "allowedTools",
        {"toolNames": ["lookup"], "mode": "required"},
        body_field("tool_choice"),
        {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "lookup"}]},
    ),
]


def test_the_cases_cover_the_28_responses_keys_of_the_spec() -> None:
    keys = [case.key for case in RESPONSES_KEY_CASES]
    assert len(keys) == len(set(keys)) == 28
    assert set(keys) == RESPONSES_OPTION_KEYS


@pytest.mark.parametrize("case", RESPONSES_KEY_CASES, ids=[case.key for case in RESPONSES_KEY_CASES])
def test_every_provider_option_reaches_its_request_field(fake: FakeOpenAI, case: KeyCase) -> None:
    fake.responses(responses_stream(responses_text_events("ok")))
    lookup = FunctionTool(name="lookup", input_schema={"type": "object"})
    options = ModelCallOptions(
        prompt=case.prompt, tools=[lookup], provider_options={"openai": {case.key: case.value}}, **case.call_settings
    )

    parts = collect(model(fake, case.model_id), options)

    assert parts[0] == {"type": "stream-start", "warnings": []}
    assert case.read(fake.last_body(RESPONSES_PATH)) == case.expected


def test_unknown_and_chat_only_keys_are_warnings_and_are_not_sent(fake: FakeOpenAI) -> None:
    fake.responses(responses_stream(responses_text_events("ok")))
    options = {
        "openai": {"promptCacheKey": "k", "logitBias": {"50256": -100}, "frobnicate": 1, "prompt_cache_key": "x"}
    }

    parts = collect(model(fake), call(provider_options=options))

    assert parts[0]["warnings"] == [
        {
            "type": "unsupported",
            "feature": "logitBias",
            "details": "logitBias is an option of OpenAI Chat Completions; the OpenAI Responses API ignores it",
        },
        {"type": "other", "message": "unknown providerOptions.openai key 'frobnicate' was ignored"},
        {
            "type": "other",
            "message": (
                "unknown providerOptions.openai key 'prompt_cache_key' was ignored (did you mean 'promptCacheKey'?)"
            ),
        },
    ]
    body = fake.last_body(RESPONSES_PATH)
    assert body["prompt_cache_key"] == "k"
    assert not {"logit_bias", "logitBias", "frobnicate"} & set(body)


def test_an_invalid_option_value_fails_before_any_request(fake: FakeOpenAI) -> None:
    parts, error = collect_failure(
        model(fake), call(provider_options={"openai": {"logprobs": 99, "store": "secret-value"}})
    )

    assert parts == []
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable) == ("bad_request", False)
    assert "logprobs" in str(error) and "store" in str(error)
    assert "secret-value" not in str(error)
    assert fake.requests == []


def test_unsupported_settings_and_reasoning_only_sampling_are_warned(fake: FakeOpenAI) -> None:
    fake.responses(responses_stream(responses_text_events("ok")))

    parts = collect(model(fake, "gpt-5-mini"), call(temperature=0.2, top_k=3, seed=1, stop_sequences=["x"]))

    assert parts[0]["warnings"] == [
        {"type": "unsupported", "feature": "topK"},
        {"type": "unsupported", "feature": "seed"},
        {"type": "unsupported", "feature": "stopSequences"},
        {
            "type": "unsupported",
            "feature": "temperature",
            "details": "temperature is not supported for reasoning models",
        },
    ]
    body = fake.last_body(RESPONSES_PATH)
    assert not {"temperature", "seed", "top_k", "stop"} & set(body)
    assert body["input"][0]["role"] == "user"


# --- files -------------------------------------------------------------------------------------

PDF = base64.b64encode(b"%PDF-1.4 fake").decode()


def test_image_urls_and_pdf_data_become_input_image_and_input_file(fake: FakeOpenAI) -> None:
    fake.responses(responses_stream(responses_text_events("ok")))
    message = UserModelMessage(
        content=[
            ModelTextPart(text="Compare"),
            ModelFilePart(
                media_type="image/png",
                data=UrlFileData(url="https://example.com/cat.png"),
                provider_options={"openai": {"imageDetail": "low"}},
            ),
            ModelFilePart(media_type="application/pdf", data=DataFileData(data=PDF)),
        ]
    )

    collect(model(fake), call(message))

    assert fake.last_body(RESPONSES_PATH)["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Compare"},
                {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "low"},
                {"type": "input_file", "filename": "part-2.pdf", "file_data": f"data:application/pdf;base64,{PDF}"},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("model_id", "part", "message"),
    [
        ("gpt-4.1", CSV_FILE, "gpt-4.1 on the OpenAI Responses API cannot take text/csv files"),
        (
            "gpt-3.5-turbo",
            ModelFilePart(media_type="image/png", data=UrlFileData(url="https://example.com/a.png")),
            "gpt-3.5-turbo on the OpenAI Responses API cannot take image/png images",
        ),
    ],
    ids=["csv-without-pass-through", "image-on-a-text-model"],
)
def test_a_file_the_model_cannot_take_is_refused_before_any_request(
    fake: FakeOpenAI, model_id: str, part: ModelFilePart, message: str
) -> None:
    parts, error = collect_failure(model(fake, model_id), call(UserModelMessage(content=[part])))

    assert parts == []
    assert isinstance(error, UnsupportedCapabilityError)
    assert str(error).startswith(message)
    assert (error.provider, error.model_id) == ("openai", model_id)
    assert fake.requests == []


# --- faults ------------------------------------------------------------------------------------


def test_429_is_a_retryable_rate_limit_with_retry_after_and_no_sdk_retry(fake: FakeOpenAI) -> None:
    fake.responses(
        error_reply(
            429, f"Rate limit reached for key {API_KEY}", code="rate_limit_exceeded", headers={"retry-after": "7"}
        )
    )

    parts, error = collect_failure(model(fake), call())

    assert parts == []
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable, error.status_code, error.retry_after) == ("rate_limit", True, 429, 7.0)
    assert API_KEY not in str(error)
    assert "rate_limit_exceeded" in str(error)
    assert len(fake.requests) == 1  # max_retries=0: the loop owns retries


def test_429_insufficient_quota_is_not_retryable(fake: FakeOpenAI) -> None:
    fake.responses(error_reply(429, "You exceeded your current quota", code="insufficient_quota"))

    _, error = collect_failure(model(fake), call())

    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable) == ("rate_limit", False)


def test_500_before_any_output_is_a_retryable_server_error(fake: FakeOpenAI) -> None:
    fake.responses(error_reply(500, "The server had an error"))

    parts, error = collect_failure(model(fake), call())

    assert parts == []
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable, error.status_code) == ("server", True, 500)
    assert len(fake.requests) == 1


def test_401_is_not_retryable_and_its_message_never_shows_the_key(fake: FakeOpenAI) -> None:
    fake.responses(
        error_reply(401, f"Incorrect API key provided: {API_KEY[:6]}***{API_KEY[-4:]}", code="invalid_api_key")
    )

    _, error = collect_failure(model(fake), call())

    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable) == ("auth", False)
    assert API_KEY[-4:] not in str(error)


def test_a_connection_dropped_mid_stream_raises_after_the_parts_already_yielded(fake: FakeOpenAI) -> None:
    fake.responses(responses_stream(responses_text_events("Hello there"), drop_after=5))

    parts, error = collect_failure(model(fake), call())

    assert [part["type"] for part in parts] == ["stream-start", "response-metadata", "text-start", "text-delta"]
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable) == ("connection", True)


def test_a_stream_that_ends_without_a_terminal_event_is_a_retryable_error(fake: FakeOpenAI) -> None:
    fake.responses(responses_stream(responses_text_events("Hello there")[:5]))

    parts, error = collect_failure(model(fake), call())

    assert parts[-1] == {"type": "text-delta", "id": "msg_1", "delta": "Hello"}
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable) == ("connection", True)


def test_a_slow_first_byte_past_the_timeout_is_a_retryable_timeout(fake: FakeOpenAI) -> None:
    fake.responses(responses_stream(responses_text_events("late"), delay_before_headers=2.0))

    parts, error = collect_failure(model(fake, timeout=0.3), call())

    assert parts == []
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable) == ("timeout", True)


def test_an_unreachable_server_is_a_retryable_connection_error() -> None:
    with FakeOpenAI() as server:
        base_url = server.base_url
    unreachable = OpenAIResponsesModel("gpt-4.1", base_url=base_url, api_key=API_KEY, timeout=2)

    parts, error = collect_failure(unreachable, call())

    assert parts == []
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.retryable) == ("connection", True)


def test_capabilities_follow_the_model_id() -> None:
    assert model_capabilities("gpt-5-mini") == (("image/*", "application/pdf"), True)
    assert model_capabilities("gpt-4o") == (("image/*", "application/pdf"), False)
    assert model_capabilities("gpt-3.5-turbo") == ((), False)


def model_capabilities(model_id: str) -> tuple[tuple[str, ...], bool]:
    capabilities = OpenAIResponsesModel(model_id, api_key="unused").capabilities
    return capabilities.input_media_types, capabilities.reasoning_history


def test_the_fake_server_fails_loudly_on_a_request_it_has_no_reply_for() -> None:
    with FakeOpenAI() as server:
        _, error = collect_failure(OpenAIResponsesModel("gpt-4.1", base_url=server.base_url, api_key=API_KEY), call())
        assert server.unexpected == ["POST /v1/responses"]
        with pytest.raises(AssertionError, match="requests without a scripted reply"):
            server.assert_all_consumed()
        server.responses(Reply(status=204))
        with pytest.raises(AssertionError, match="scripted replies were never requested"):
            server.assert_all_consumed()
    assert isinstance(error, ModelCallError)
    assert (error.kind, error.status_code) == ("server", 500)
