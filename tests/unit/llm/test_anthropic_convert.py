"""The Anthropic adapter's pure halves: request conversion and the stream-state machine.

Why not recorded HTTP (tests/integration/providers/test_anthropic.py does that): these pin the
corner cases of two pure functions, each in a line or two, with no SDK and no socket in the way.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import JsonValue

from stepline.llm.anthropic.convert import build_request
from stepline.llm.anthropic.stream import AnthropicStreamState
from stepline.llm.anthropic.traits import anthropic_capabilities, model_traits
from stepline.llm.anthropic.usage import finish_reason, usage_from_anthropic
from stepline.llm.base import FunctionTool, ModelCallOptions, ResponseFormat
from stepline.llm.errors import ModelCallError, UnsupportedCapabilityError
from stepline.llm.stream_parts import ModelStreamPart
from stepline.protocol.model_messages import (
    AssistantModelMessage,
    ContentOutput,
    DataFileData,
    ErrorJsonOutput,
    ErrorTextOutput,
    ExecutionDeniedOutput,
    JsonOutput,
    ModelCustomPart,
    ModelFilePart,
    ModelMessage,
    ModelReasoningPart,
    ModelTextPart,
    ProviderOptions,
    ReferenceFileData,
    SystemModelMessage,
    TextFileData,
    TextOutput,
    ToolApprovalRequestPart,
    ToolApprovalResponsePart,
    ToolCallPart,
    ToolModelMessage,
    ToolResultOutput,
    ToolResultPart,
    UrlFileData,
    UserModelMessage,
)

MODEL = "claude-sonnet-4-6"
CACHE: ProviderOptions = {"anthropic": {"cacheControl": {"type": "ephemeral"}}}


def user(text: str) -> UserModelMessage:
    return UserModelMessage(content=[ModelTextPart(text=text)])


def build(*prompt: ModelMessage, model_id: str = MODEL, **settings: Any) -> tuple[dict[str, Any], list[Any]]:
    request = build_request(
        ModelCallOptions(prompt=list(prompt) or [user("Hi")], **settings),
        model_id=model_id,
        capabilities=anthropic_capabilities(model_id),
        default_max_tokens=1000,
    )
    return request.body, request.warnings


# --- model traits --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "documents", "structured", "adaptive"),
    [
        ("claude-3-haiku-20240307", False, False, False),
        ("claude-3-5-sonnet-20241022", True, False, False),
        ("claude-3-7-sonnet-latest", True, False, False),
        ("claude-opus-4-20250514", True, False, False),
        ("claude-opus-4-1", True, True, False),
        ("claude-sonnet-4-5-20250929", True, True, False),
        ("claude-sonnet-4-6", True, True, True),
        ("us.anthropic.claude-opus-4-7-v1:0", True, True, True),
        ("claude-next", True, True, True),
        ("minimax-m2", False, False, False),
    ],
)
def test_model_traits_follow_family_and_version(
    model_id: str, documents: bool, structured: bool, adaptive: bool
) -> None:
    traits = model_traits(model_id)
    assert (traits.documents, traits.structured_output, traits.adaptive_thinking) == (documents, structured, adaptive)


# --- prompt --------------------------------------------------------------------------------------


def test_consecutive_same_role_messages_merge_and_tool_results_join_the_user_turn() -> None:
    call = ToolCallPart(tool_call_id="t1", tool_name="lookup", input={"q": "x"})
    result = ToolResultPart(tool_call_id="t1", tool_name="lookup", output=TextOutput(value="found"))

    body, _ = build(
        user("a"),
        user("b"),
        AssistantModelMessage(content=[ModelTextPart(text="Looking."), call]),
        ToolModelMessage(content=[result]),
        user("thanks"),
    )

    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": "x"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "found"},
                {"type": "text", "text": "thanks"},
            ],
        },
    ]


@pytest.mark.parametrize(
    ("output", "content", "is_error"),
    [
        (TextOutput(value="ok"), "ok", False),
        (JsonOutput(value={"a": [1, 2]}), '{"a":[1,2]}', False),
        (ErrorTextOutput(value="boom"), "boom", True),
        (ErrorJsonOutput(value={"code": 7}), '{"code":7}', True),
        (ExecutionDeniedOutput(reason="not today"), "not today", False),
        (ExecutionDeniedOutput(), "Tool call execution denied.", False),
        (
            ContentOutput(
                value=[{"type": "text", "text": "see"}, {"type": "image-data", "data": "AAA", "mediaType": "image/png"}]
            ),
            [
                {"type": "text", "text": "see"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}},
            ],
            False,
        ),
    ],
)
def test_tool_result_outputs(output: ToolResultOutput, content: Any, is_error: bool) -> None:
    result = ToolResultPart(tool_call_id="t1", tool_name="lookup", output=output)

    body, _ = build(user("go"), ToolModelMessage(content=[result]))

    block = body["messages"][0]["content"][1]
    assert block == {"type": "tool_result", "tool_use_id": "t1", "content": content} | (
        {"is_error": True} if is_error else {}
    )


def test_approval_parts_are_loop_bookkeeping_and_are_not_sent() -> None:
    body, warnings = build(
        user("go"),
        AssistantModelMessage(
            content=[
                ToolCallPart(tool_call_id="t1", tool_name="rm", input=None),
                ToolApprovalRequestPart(approval_id="a1", tool_call_id="t1"),
            ]
        ),
        ToolModelMessage(
            content=[
                ToolApprovalResponsePart(approval_id="a1", approved=False),
                ToolResultPart(tool_call_id="t1", tool_name="rm", output=ExecutionDeniedOutput()),
            ]
        ),
    )

    assert body["messages"][1]["content"] == [{"type": "tool_use", "id": "t1", "name": "rm", "input": {}}]
    assert [block["type"] for block in body["messages"][2]["content"]] == ["tool_result"]
    assert warnings == []


def test_a_non_object_tool_input_is_wrapped_as_anthropic_needs_an_object() -> None:
    body, _ = build(
        user("go"), AssistantModelMessage(content=[ToolCallPart(tool_call_id="t", tool_name="f", input="oops")])
    )

    assert body["messages"][1]["content"][0]["input"] == {"rawInvalidInput": "oops"}


def test_the_last_assistant_text_loses_trailing_whitespace_and_empty_text_is_dropped() -> None:
    body, _ = build(
        user("a"),
        AssistantModelMessage(content=[ModelTextPart(text=""), ModelTextPart(text="Prefill  \n")]),
    )

    assert body["messages"][1]["content"] == [{"type": "text", "text": "Prefill"}]


def test_reasoning_without_a_signature_is_dropped_with_a_warning() -> None:
    body, warnings = build(
        user("a"),
        AssistantModelMessage(content=[ModelReasoningPart(text="hmm"), ModelTextPart(text="Hi")]),
        user("b"),
    )

    assert body["messages"][1]["content"] == [{"type": "text", "text": "Hi"}]
    assert warnings == [
        {"type": "other", "message": "prompt.1.content.0: reasoning without an Anthropic signature was not sent"}
    ]


def test_assistant_parts_anthropic_cannot_take_are_left_out_with_a_warning() -> None:
    body, warnings = build(
        user("a"), AssistantModelMessage(content=[ModelCustomPart(kind="x"), ModelTextPart(text="Hi")])
    )

    assert body["messages"][1]["content"] == [{"type": "text", "text": "Hi"}]
    assert [warning["message"] for warning in warnings] == [
        "prompt.1.content.0: an assistant custom part cannot be sent to Anthropic and was left out"
    ]


def test_provider_executed_tool_calls_and_results_go_back_as_server_tool_blocks() -> None:
    search: dict[str, JsonValue] = {"query": "weather"}
    results: list[JsonValue] = [
        {
            "url": "https://example.com",
            "title": "Ex",
            "pageAge": None,
            "encryptedContent": "E",
            "type": "web_search_result",
        },
    ]
    body, _ = build(
        user("a"),
        AssistantModelMessage(
            content=[
                ToolCallPart(tool_call_id="srv1", tool_name="web_search", input=search, provider_executed=True),
                ToolResultPart(tool_call_id="srv1", tool_name="web_search", output=JsonOutput(value=results)),
            ]
        ),
    )

    assert body["messages"][1]["content"] == [
        {"type": "server_tool_use", "id": "srv1", "name": "web_search", "input": search},
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srv1",
            "content": [
                {
                    "url": "https://example.com",
                    "title": "Ex",
                    "page_age": None,
                    "encrypted_content": "E",
                    "type": "web_search_result",
                }
            ],
        },
    ]


def test_message_level_cache_control_goes_on_the_last_part_and_the_fifth_breakpoint_is_refused() -> None:
    prompt = [SystemModelMessage(content=f"rules {n}", provider_options=CACHE) for n in range(4)] + [
        UserModelMessage(content=[ModelTextPart(text="a"), ModelTextPart(text="b")], provider_options=CACHE)
    ]

    body, warnings = build(*prompt)

    assert all("cache_control" in block for block in body["system"])
    assert body["messages"][0]["content"] == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert [warning["feature"] for warning in warnings] == ["cacheControl breakpoint limit"]


def test_a_late_system_message_is_moved_into_system_with_a_warning() -> None:
    body, warnings = build(user("a"), SystemModelMessage(content="Now be terse."))

    assert body["system"] == "Now be terse."
    assert warnings[0]["message"].startswith("prompt.1: a system message after the conversation began")


def test_file_variants_become_the_right_sources() -> None:
    text_b64 = "aGVsbG8="  # "hello"
    body, _ = build(
        UserModelMessage(
            content=[
                ModelFilePart(media_type="text/plain", data=TextFileData(text="notes"), filename="n.txt"),
                ModelFilePart(media_type="text/plain", data=DataFileData(data=text_b64)),
                ModelFilePart(media_type="application/pdf", data=UrlFileData(url="https://example.com/a.pdf")),
                ModelFilePart(media_type="image/*", data=DataFileData(data="/9j/4AAQ")),
                ModelFilePart(
                    media_type="application/pdf",
                    data=ReferenceFileData(reference={"anthropic": "file_011"}),
                    provider_options={"anthropic": {"citations": {"enabled": True}, "title": "Spec", "context": "v2"}},
                ),
            ]
        )
    )

    assert body["messages"][0]["content"] == [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}, "title": "n.txt"},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hello"}},
        {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}},
        {
            "type": "document",
            "source": {"type": "file", "file_id": "file_011"},
            "title": "Spec",
            "context": "v2",
            "citations": {"enabled": True},
        },
    ]


def test_a_file_reference_needs_the_files_beta_and_an_anthropic_id() -> None:
    reference = ModelFilePart(media_type="image/png", data=ReferenceFileData(reference={"anthropic": "file_1"}))
    request = build_request(
        ModelCallOptions(prompt=[UserModelMessage(content=[reference])]),
        model_id=MODEL,
        capabilities=anthropic_capabilities(MODEL),
        default_max_tokens=1000,
    )
    assert request.headers == {"anthropic-beta": "files-api-2025-04-14"}

    elsewhere = ModelFilePart(media_type="image/png", data=ReferenceFileData(reference={"openai": "file-abc"}))
    with pytest.raises(UnsupportedCapabilityError, match="no Anthropic file id"):
        build(UserModelMessage(content=[elsewhere]))


# --- request settings ----------------------------------------------------------------------------


def test_settings_anthropic_lacks_are_warnings_and_temperature_is_clamped() -> None:
    body, warnings = build(temperature=1.5, presence_penalty=0.1, frequency_penalty=0.2, seed=7)

    assert body["temperature"] == 1.0
    assert [warning["feature"] for warning in warnings] == [
        "presencePenalty",
        "frequencyPenalty",
        "seed",
        "temperature",
    ]


def test_top_p_is_dropped_when_temperature_is_set_on_claude_models() -> None:
    body, warnings = build(temperature=0.5, top_p=0.9)

    assert (body["temperature"], "top_p" in body) == (0.5, False)
    assert warnings == [
        {
            "type": "unsupported",
            "feature": "topP",
            "details": "topP is not supported when temperature is set; it was not sent",
        }
    ]


@pytest.mark.parametrize(
    ("choice", "disable_parallel", "expected"),
    [
        (None, None, None),
        (None, True, {"type": "auto", "disable_parallel_tool_use": True}),
        ("auto", None, {"type": "auto"}),
        ("required", True, {"type": "any", "disable_parallel_tool_use": True}),
        ("none", True, {"type": "none"}),
        ({"type": "tool", "toolName": "lookup"}, None, {"type": "tool", "name": "lookup"}),
    ],
)
def test_tool_choice(choice: Any, disable_parallel: bool | None, expected: dict[str, Any] | None) -> None:
    options = {"anthropic": {"disableParallelToolUse": disable_parallel}} if disable_parallel else {}
    tool = FunctionTool(name="lookup", input_schema={"type": "object"}, description="Find.", strict=True)

    body, _ = build(tools=[tool], tool_choice=choice, provider_options=options)

    assert body.get("tool_choice") == expected
    assert body["tools"] == [
        {
            "name": "lookup",
            "description": "Find.",
            "input_schema": {"type": "object"},
            "eager_input_streaming": True,
            "strict": True,
        }
    ]


def test_structured_output_uses_a_forced_json_tool_on_older_models() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "number"}}}

    body, _ = build(model_id="claude-sonnet-4-20250514", response_format=ResponseFormat(schema=schema))

    assert body["tools"] == [
        {
            "name": "json",
            "description": "Respond with a JSON object.",
            "input_schema": schema,
            "eager_input_streaming": True,
        }
    ]
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert "output_config" not in body


def test_structured_output_uses_output_format_on_newer_models_and_needs_a_schema() -> None:
    body, _ = build(response_format=ResponseFormat(schema={"type": "object"}))
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": {"type": "object"}}}

    body, warnings = build(response_format=ResponseFormat())
    assert "output_config" not in body and warnings[0]["feature"] == "responseFormat"


@pytest.mark.parametrize(
    ("model_id", "reasoning", "thinking", "effort"),
    [
        (MODEL, "high", {"type": "adaptive", "display": "summarized"}, "high"),
        (MODEL, "none", {"type": "disabled"}, None),
        ("claude-sonnet-4-5", "medium", {"type": "enabled", "budget_tokens": 8192}, None),
        (MODEL, "provider-default", None, None),
    ],
)
def test_the_portable_reasoning_level_maps_to_thinking_and_effort(
    model_id: str, reasoning: str, thinking: dict[str, Any] | None, effort: str | None
) -> None:
    body, _ = build(model_id=model_id, reasoning=reasoning)

    assert body.get("thinking") == thinking
    assert body.get("output_config", {}).get("effort") == effort


def test_provider_thinking_wins_over_the_portable_reasoning_level() -> None:
    thinking = {"anthropic": {"thinking": {"type": "enabled", "budgetTokens": 2000}}}

    body, _ = build(reasoning="high", provider_options=thinking, model_id="claude-sonnet-4-5")

    assert (body["thinking"], body["max_tokens"]) == ({"type": "enabled", "budget_tokens": 2000}, 3000)


def test_betas_from_options_and_caller_headers_share_one_header_without_duplicates() -> None:
    request = build_request(
        ModelCallOptions(
            prompt=[user("Hi")],
            headers={"Anthropic-Beta": "a-beta, fast-mode-2026-02-01", "x-trace": "t1"},
            provider_options={"anthropic": {"speed": "fast", "anthropicBeta": ["a-beta"]}},
        ),
        model_id=MODEL,
        capabilities=anthropic_capabilities(MODEL),
        default_max_tokens=1000,
    )

    assert request.headers == {"x-trace": "t1", "anthropic-beta": "fast-mode-2026-02-01,a-beta"}


def test_unknown_keys_are_found_at_any_depth_and_snake_case_spellings_are_unknown() -> None:
    options = {
        "anthropic": {
            "thinking": {"type": "enabled", "budget_tokens": 3000},
            "metadata": {"userId": "u1", "team": "x"},
        }
    }

    body, warnings = build(provider_options=options)

    assert [warning["feature"] for warning in warnings[:2]] == [
        "providerOptions.anthropic.thinking.budget_tokens",
        "providerOptions.anthropic.metadata.team",
    ]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}  # the misspelt budget was not used
    assert body["metadata"] == {"user_id": "u1"}


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ({"thinking": {"type": "sometimes"}}, "providerOptions.anthropic.thinking"),
        ({"taskBudget": {"type": "tokens", "total": 100}}, "providerOptions.anthropic.taskBudget.total"),
        ({"effort": "extreme"}, "providerOptions.anthropic.effort"),
    ],
)
def test_invalid_option_values_are_non_retryable_bad_requests_naming_the_path(
    options: dict[str, Any], path: str
) -> None:
    with pytest.raises(ModelCallError) as caught:
        build(provider_options={"anthropic": options})

    assert (caught.value.kind, caught.value.retryable) == ("bad_request", False)
    assert path in str(caught.value)


def test_a_custom_skill_is_sent_with_its_anthropic_id() -> None:
    skill = {"type": "custom", "providerReference": {"anthropic": "skill_01"}, "version": "2"}

    body, _ = build(provider_options={"anthropic": {"container": {"skills": [skill]}}})

    assert body["container"] == {"skills": [{"type": "custom", "skill_id": "skill_01", "version": "2"}]}


def test_a_container_without_skills_is_its_id_alone() -> None:
    body, _ = build(provider_options={"anthropic": {"container": {"id": "container_9"}}})

    assert body["container"] == "container_9"


# --- stream state --------------------------------------------------------------------------------


def feed(state: AnthropicStreamState, *events: dict[str, Any]) -> list[dict[str, Any]]:
    parts: list[ModelStreamPart] = []
    for event in events:
        parts += state.feed(str(event["type"]), json.dumps(event))
    return [part.to_wire() for part in parts]


def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": fields}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def test_the_forced_json_tool_streams_as_text_and_finishes_as_stop() -> None:
    state = AnthropicStreamState(uses_json_tool=True)

    parts = feed(
        state,
        start(0, {"type": "tool_use", "id": "toolu_1", "name": "json", "input": {}}),
        delta(0, type="input_json_delta", partial_json='{"n":'),
        delta(0, type="input_json_delta", partial_json="1}"),
        stop(0),
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    )

    assert parts[:4] == [
        {"type": "text-start", "id": "0"},
        {"type": "text-delta", "id": "0", "delta": '{"n":'},
        {"type": "text-delta", "id": "0", "delta": "1}"},
        {"type": "text-end", "id": "0"},
    ]
    assert parts[-1]["finishReason"] == {"unified": "stop", "raw": "tool_use"}


def test_citations_arrive_on_text_end_as_the_ai_sdk_maps_them_and_ride_in_its_metadata() -> None:
    web = {
        "type": "web_search_result_location",
        "url": "https://ex.com",
        "title": "Ex",
        "cited_text": "It rains.",
        "encrypted_index": "IDX",
    }
    doc = {"type": "char_location", "cited_text": "Clause 4", "document_index": 0, "document_title": "Contract"}

    parts = feed(
        AnthropicStreamState(),
        start(0, {"type": "text", "text": ""}),
        delta(0, type="citations_delta", citation=web),
        delta(0, type="citations_delta", citation=doc),
        delta(0, type="text_delta", text="Rain."),
        stop(0),
    )

    # `mapAnthropicCitation`: a web source's id is its URL, a document's its index; the raw
    # citations (with `encrypted_index`) ride in the provider metadata, to be sent back next time.
    assert parts[-1] == {
        "type": "text-end",
        "id": "0",
        "citations": [
            {
                "source": {
                    "type": "source",
                    "sourceType": "url",
                    "id": "https://ex.com",
                    "url": "https://ex.com",
                    "title": "Ex",
                    "providerMetadata": {"anthropic": web},
                },
                "citedText": "It rains.",
            },
            {
                "source": {
                    "type": "source",
                    "sourceType": "document",
                    "id": "0",
                    "mediaType": "text/plain",
                    "title": "Contract",
                    "providerMetadata": {"anthropic": doc},
                },
                "citedText": "Clause 4",
            },
        ],
        "providerMetadata": {"anthropic": {"citations": [web, doc]}},
    }


def test_server_tool_use_and_its_result_are_provider_executed() -> None:
    content = [
        {
            "type": "web_search_result",
            "url": "https://ex.com",
            "title": "Ex",
            "page_age": None,
            "encrypted_content": "E",
        },
    ]

    parts = feed(
        AnthropicStreamState(),
        start(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        delta(0, type="input_json_delta", partial_json='{"query":"rain"}'),
        stop(0),
        start(1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": content}),
        stop(1),
        start(
            2,
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"},
            },
        ),
    )

    assert parts[0] == {
        "type": "tool-input-start",
        "id": "srvtoolu_1",
        "toolName": "web_search",
        "providerExecuted": True,
    }
    assert parts[3] == {
        "type": "tool-call",
        "toolCallId": "srvtoolu_1",
        "toolName": "web_search",
        "input": '{"query":"rain"}',
        "providerExecuted": True,
    }
    assert parts[4] == {
        "type": "tool-result",
        "toolCallId": "srvtoolu_1",
        "toolName": "web_search",
        "result": [
            {
                "url": "https://ex.com",
                "title": "Ex",
                "pageAge": None,
                "encryptedContent": "E",
                "type": "web_search_result",
            },
        ],
    }
    assert parts[5]["type"] == "source" and parts[5]["url"] == "https://ex.com"
    assert parts[6] == {
        "type": "tool-result",
        "toolCallId": "srvtoolu_1",
        "toolName": "web_search",
        "result": {"type": "web_search_tool_result_error", "errorCode": "max_uses_exceeded"},
        "isError": True,
    }


def test_mcp_tool_use_carries_its_server_name() -> None:
    parts = feed(
        AnthropicStreamState(),
        start(
            0,
            {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "search", "server_name": "docs", "input": {"q": "x"}},
        ),
        stop(0),
        start(
            1,
            {
                "type": "mcp_tool_result",
                "tool_use_id": "mcptoolu_1",
                "is_error": True,
                "content": [{"type": "text", "text": "no"}],
            },
        ),
    )

    # The whole input came with the start event, so it is streamed once at the stop.
    assert parts[1:3] == [
        {"type": "tool-input-delta", "id": "mcptoolu_1", "delta": '{"q":"x"}'},
        {"type": "tool-input-end", "id": "mcptoolu_1"},
    ]
    assert parts[3]["providerMetadata"] == {"anthropic": {"type": "mcp-tool-use", "serverName": "docs"}}
    assert (parts[4]["toolName"], parts[4]["isError"]) == ("search", True)


def test_message_delta_usage_replaces_the_running_totals() -> None:
    state = AnthropicStreamState()

    parts = feed(
        state,
        {
            "type": "message_start",
            "message": {"id": "m", "model": MODEL, "usage": {"input_tokens": 10, "output_tokens": 1}},
        },
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"input_tokens": 12, "output_tokens": 40, "cache_read_input_tokens": None},
        },
        {"type": "message_stop"},
    )

    assert parts[-1]["usage"]["inputTokens"] == {"total": 12, "noCache": 12}
    assert parts[-1]["usage"]["outputTokens"] == {"total": 40}


def test_ping_and_unknown_events_yield_nothing_and_raw_chunks_yield_raw_parts() -> None:
    assert feed(AnthropicStreamState(), {"type": "ping"}, {"type": "brand_new_event", "x": 1}) == []
    assert feed(AnthropicStreamState(include_raw=True), {"type": "ping"}) == [
        {"type": "raw", "rawValue": {"type": "ping"}}
    ]


def test_an_unparsable_event_is_an_error_part_and_the_stream_goes_on() -> None:
    state = AnthropicStreamState()

    parts = state.feed("content_block_delta", "{not json")

    assert [part.to_wire() for part in parts] == [
        {
            "type": "error",
            "error": {"type": "invalid_chunk", "message": "an content_block_delta event was not a JSON object"},
        }
    ]


def test_close_without_message_stop_raises_a_retryable_connection_error() -> None:
    state = AnthropicStreamState()
    feed(state, {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1}}})

    with pytest.raises(ModelCallError) as caught:
        state.close()

    assert (caught.value.kind, caught.value.retryable) == ("connection", True)


def test_close_after_message_stop_adds_nothing() -> None:
    state = AnthropicStreamState()
    feed(state, {"type": "message_stop"})

    assert state.close() == []


def test_finish_reason_and_usage_helpers() -> None:
    assert finish_reason(None).to_wire() == {"unified": "other"}
    assert finish_reason("model_context_window_exceeded").unified == "length"
    assert usage_from_anthropic({}).to_wire() == {"inputTokens": {}, "outputTokens": {}}
