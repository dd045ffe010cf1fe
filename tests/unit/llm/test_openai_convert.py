"""Pure conversion for the OpenAI adapters: messages and options → request bodies, events → parts.

These run without a server because they pin mapping rules one at a time (message shapes, option
validation, usage arithmetic); the integration tests drive the same code through the real SDK.
"""

from __future__ import annotations

from typing import Any

import pytest

from stepline.llm.base import FunctionTool, ModelCallOptions, ResponseFormat
from stepline.llm.errors import ModelCallError, UnsupportedCapabilityError
from stepline.llm.openai.capabilities import model_family, responses_capabilities
from stepline.llm.openai.chat_convert import build_chat_request
from stepline.llm.openai.chat_stream import ChatStreamState
from stepline.llm.openai.options import parse_chat_options, parse_responses_options
from stepline.llm.openai.responses_convert import build_responses_request
from stepline.llm.openai.responses_stream import ResponsesStreamState
from stepline.llm.openai.stream_common import chat_usage, responses_usage
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
    ReferenceFileData,
    SystemModelMessage,
    TextOutput,
    ToolApprovalRequestPart,
    ToolApprovalResponsePart,
    ToolCallPart,
    ToolModelMessage,
    ToolResultOutput,
    ToolResultPart,
    UserModelMessage,
)


def user(text: str) -> UserModelMessage:
    return UserModelMessage(content=[ModelTextPart(text=text)])


def responses_body(model_id: str, *messages: ModelMessage, **kwargs: Any) -> dict[str, Any]:
    return build_responses_request(model_id, ModelCallOptions(prompt=list(messages), **kwargs)).body


def chat_body(model_id: str, *messages: ModelMessage, **kwargs: Any) -> dict[str, Any]:
    return build_chat_request(model_id, ModelCallOptions(prompt=list(messages), **kwargs)).body


# --- system messages ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "role"),
    [("gpt-4.1", "system"), ("gpt-4o-mini", "system"), ("gpt-5-mini", "developer"), ("o3", "developer")],
)
def test_system_messages_use_the_developer_role_on_reasoning_models(model_id: str, role: str) -> None:
    system = SystemModelMessage(content="Rules.")

    assert responses_body(model_id, system, user("Hi"))["input"][0] == {"role": role, "content": "Rules."}
    assert chat_body(model_id, system, user("Hi"))["messages"][0] == {"role": role, "content": "Rules."}


def test_system_message_mode_remove_drops_them_with_a_warning() -> None:
    options = ModelCallOptions(
        prompt=[SystemModelMessage(content="Rules."), user("Hi")],
        provider_options={"openai": {"systemMessageMode": "remove"}},
    )

    request = build_responses_request("gpt-4.1", options)

    assert request.body["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}]
    assert request.warnings == [{"type": "other", "message": "system messages are removed for this model"}]


# --- assistant history -------------------------------------------------------------------------


def test_reasoning_parts_of_one_item_merge_and_keep_the_last_encrypted_content() -> None:
    history = AssistantModelMessage(
        content=[
            ModelReasoningPart(
                text="A", provider_options={"openai": {"itemId": "rs_1", "reasoningEncryptedContent": None}}
            ),
            ModelReasoningPart(
                text="B", provider_options={"openai": {"itemId": "rs_1", "reasoningEncryptedContent": "e"}}
            ),
            ModelReasoningPart(text="", provider_options={"openai": {"reasoningEncryptedContent": "solo"}}),
            ModelReasoningPart(text="from another provider"),
        ]
    )

    request = build_responses_request("o4-mini", ModelCallOptions(prompt=[user("q"), history]))

    assert request.body["input"][1:] == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "encrypted_content": "e",
            "summary": [{"type": "summary_text", "text": "A"}, {"type": "summary_text", "text": "B"}],
        },
        {"type": "reasoning", "encrypted_content": "solo", "summary": []},
    ]
    assert request.warnings == [
        {"type": "other", "message": "reasoning without an OpenAI item id or encrypted content was not sent"}
    ]


def test_items_the_server_already_holds_are_skipped_for_a_conversation() -> None:
    history = AssistantModelMessage(
        content=[
            ModelReasoningPart(text="r", provider_options={"openai": {"itemId": "rs_1"}}),
            ModelTextPart(text="old", provider_options={"openai": {"itemId": "msg_1"}}),
            ToolCallPart(tool_call_id="c1", tool_name="t", input={}, provider_options={"openai": {"itemId": "fc_1"}}),
            ModelTextPart(text="local only"),
        ]
    )

    body = responses_body("gpt-5", history, provider_options={"openai": {"conversation": "conv_1"}})

    assert body["input"] == [{"role": "assistant", "content": [{"type": "output_text", "text": "local only"}]}]


def test_previous_response_id_skips_only_stored_reasoning() -> None:
    history = AssistantModelMessage(
        content=[
            ModelReasoningPart(text="r", provider_options={"openai": {"itemId": "rs_1"}}),
            ToolCallPart(tool_call_id="c1", tool_name="t", provider_options={"openai": {"itemId": "fc_1"}}),
        ]
    )

    body = responses_body("gpt-5", history, provider_options={"openai": {"previousResponseId": "resp_0"}})

    assert body["input"] == [{"type": "function_call", "call_id": "c1", "name": "t", "arguments": "{}", "id": "fc_1"}]


def test_compaction_items_go_back_and_approval_parts_stay_in_the_loop() -> None:
    compaction = {"openai": {"type": "compaction", "itemId": "cmp_1", "encryptedContent": "xyz"}}
    history: list[ModelMessage] = [
        AssistantModelMessage(
            content=[
                ModelCustomPart(kind="openai.compaction", provider_options=compaction),
                ToolCallPart(tool_call_id="c1", tool_name="rm", input={"path": "/tmp"}),
                ToolApprovalRequestPart(approval_id="a1", tool_call_id="c1"),
            ]
        ),
        ToolModelMessage(content=[ToolApprovalResponsePart(approval_id="a1", approved=False)]),
    ]

    request = build_responses_request("gpt-5", ModelCallOptions(prompt=history))

    assert request.body["input"] == [
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "xyz"},
        {"type": "function_call", "call_id": "c1", "name": "rm", "arguments": '{"path":"/tmp"}'},
    ]
    assert request.warnings == []


@pytest.mark.parametrize(
    ("output", "text"),
    [
        (TextOutput(value="plain"), "plain"),
        (ErrorTextOutput(value="it broke"), "it broke"),
        (JsonOutput(value={"ok": True, "n": [1, 2]}), '{"ok":true,"n":[1,2]}'),
        (ErrorJsonOutput(value={"error": "nope"}), '{"error":"nope"}'),
        (ExecutionDeniedOutput(), "Tool call execution denied."),
        (ExecutionDeniedOutput(reason="user said no"), "user said no"),
    ],
    ids=["text", "error-text", "json", "error-json", "denied", "denied-with-reason"],
)
def test_tool_results_become_text_on_both_apis(output: ToolResultOutput, text: str) -> None:
    result = ToolModelMessage(content=[ToolResultPart(tool_call_id="c1", tool_name="t", output=output)])

    assert responses_body("gpt-4.1", result)["input"] == [
        {"type": "function_call_output", "call_id": "c1", "output": text}
    ]
    assert chat_body("gpt-4.1", result)["messages"] == [{"role": "tool", "tool_call_id": "c1", "content": text}]


def test_content_tool_results_become_input_items_on_responses_and_json_on_chat() -> None:
    content = ContentOutput(
        value=[
            {"type": "text", "text": "see image"},
            {"type": "file", "mediaType": "image/png", "data": {"type": "url", "url": "https://x.test/a.png"}},
        ]
    )
    result = ToolModelMessage(content=[ToolResultPart(tool_call_id="c1", tool_name="shot", output=content)])

    assert responses_body("gpt-4.1", result)["input"][0]["output"] == [
        {"type": "input_text", "text": "see image"},
        {"type": "input_image", "image_url": "https://x.test/a.png"},
    ]
    chat_content = chat_body("gpt-4.1", result)["messages"][0]["content"]
    assert chat_content.startswith('[{"type":"text","text":"see image"}')


def test_chat_sends_a_single_text_as_a_string_and_text_with_tool_calls() -> None:
    history = AssistantModelMessage(
        content=[ModelTextPart(text="Let me check."), ToolCallPart(tool_call_id="c1", tool_name="t", input=None)]
    )

    messages = chat_body("gpt-4.1", user("Hi"), history)["messages"]

    assert messages == [
        {"role": "user", "content": "Hi"},
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}],
        },
    ]


# --- files -------------------------------------------------------------------------------------


def test_file_references_use_the_openai_file_id() -> None:
    part = ModelFilePart(media_type="application/pdf", data=ReferenceFileData(reference={"openai": "file-123"}))

    body = responses_body("gpt-4.1", UserModelMessage(content=[part]))

    assert body["input"][0]["content"] == [{"type": "input_file", "file_id": "file-123"}]


def test_a_reference_without_an_openai_id_is_refused() -> None:
    part = ModelFilePart(media_type="application/pdf", data=ReferenceFileData(reference={"anthropic": "f"}))

    with pytest.raises(UnsupportedCapabilityError, match="without an OpenAI file id"):
        responses_body("gpt-4.1", UserModelMessage(content=[part]))


def test_pdfs_need_a_vision_model_on_responses() -> None:
    part = ModelFilePart(media_type="application/pdf", data=DataFileData(data="JVBERi0="))

    with pytest.raises(UnsupportedCapabilityError, match="gpt-3.5-turbo on the OpenAI Responses API cannot take PDF"):
        responses_body("gpt-3.5-turbo", UserModelMessage(content=[part]))


# --- settings ----------------------------------------------------------------------------------


def test_gpt_5_1_keeps_temperature_when_reasoning_is_off() -> None:
    request = build_responses_request(
        "gpt-5.1", ModelCallOptions(prompt=[user("x")], temperature=0.3, reasoning="none")
    )

    assert request.body["temperature"] == 0.3
    assert request.body["reasoning"] == {"effort": "none"}
    assert request.warnings == []


def test_reasoning_settings_on_a_non_reasoning_model_are_warnings() -> None:
    options = ModelCallOptions(
        prompt=[user("x")], reasoning="high", provider_options={"openai": {"reasoningSummary": "auto"}}
    )

    request = build_responses_request("gpt-4.1", options)

    assert "reasoning" not in request.body
    assert [warning["feature"] for warning in request.warnings] == ["reasoningSummary", "reasoning"]


def test_service_tiers_a_model_lacks_are_dropped_with_a_warning() -> None:
    options = ModelCallOptions(prompt=[user("x")], provider_options={"openai": {"serviceTier": "flex"}})

    responses = build_responses_request("gpt-4.1", options)
    chat = build_chat_request("gpt-4.1", options)

    assert "service_tier" not in responses.body and "service_tier" not in chat.body
    assert responses.warnings[0]["feature"] == chat.warnings[0]["feature"] == "serviceTier"


def test_json_response_formats() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    with_schema = ResponseFormat(schema=schema, name="thing", description="A thing")

    assert responses_body("gpt-4.1", user("x"), response_format=with_schema)["text"] == {
        "format": {"type": "json_schema", "strict": True, "name": "thing", "schema": schema, "description": "A thing"}
    }
    assert chat_body("gpt-4.1", user("x"), response_format=ResponseFormat())["response_format"] == {
        "type": "json_object"
    }


def test_tool_choice_strings_pass_through_and_are_omitted_without_tools() -> None:
    tool = FunctionTool(name="t", input_schema={"type": "object"})

    assert responses_body("gpt-4.1", user("x"), tools=[tool], tool_choice="required")["tool_choice"] == "required"
    assert chat_body("gpt-4.1", user("x"), tools=[tool], tool_choice="none")["tool_choice"] == "none"
    assert "tool_choice" not in responses_body("gpt-4.1", user("x"), tool_choice="required")


def test_allowed_tools_naming_an_unknown_tool_warn_but_are_sent() -> None:
    options = ModelCallOptions(
        prompt=[user("x")],
        tools=[FunctionTool(name="a", input_schema={})],
        provider_options={"openai": {"allowedTools": {"toolNames": ["a", "ghost"]}}},
    )

    request = build_responses_request("gpt-4.1", options)

    assert request.body["tool_choice"]["tools"] == [
        {"type": "function", "name": "a"},
        {"type": "function", "name": "ghost"},
    ]
    assert request.warnings[0]["feature"] == 'allowedTools entry "ghost"'


# --- options validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"logprobs": 21}, "logprobs"),
        ({"serviceTier": "turbo"}, "serviceTier"),
        ({"allowedTools": {"toolNames": []}}, "allowedTools.toolNames"),
        ({"contextManagement": [{"type": "compaction"}]}, "contextManagement.0.compactThreshold"),
        ({"store": "yes"}, "store"),
    ],
)
def test_invalid_responses_option_values_name_the_field(options: dict[str, Any], field: str) -> None:
    with pytest.raises(ModelCallError) as raised:
        parse_responses_options({"openai": options})

    assert raised.value.kind == "bad_request" and raised.value.retryable is False
    assert f"providerOptions.openai: {field}" in str(raised.value)


@pytest.mark.parametrize(
    "options",
    [{"logitBias": {"not-a-token": 1}}, {"metadata": {"k": "v" * 513}}, {"reasoningEffort": "extreme"}],
)
def test_invalid_chat_option_values_are_rejected(options: dict[str, Any]) -> None:
    with pytest.raises(ModelCallError, match="invalid providerOptions.openai"):
        parse_chat_options({"openai": options})


def test_options_of_another_provider_are_ignored() -> None:
    settings, warnings = parse_responses_options({"anthropic": {"cacheControl": {"type": "ephemeral"}}})

    assert settings.model_dump(exclude_none=True) == {}
    assert warnings == []


# --- model ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "reasoning", "images"),
    [
        ("gpt-5", True, True),
        ("gpt-5-chat-latest", False, True),
        ("gpt-5.1-codex", True, True),
        ("o1", True, True),
        ("o3-mini", True, False),
        ("gpt-4o-2024-08-06", False, True),
        ("gpt-4.1-nano", False, True),
        ("gpt-3.5-turbo", False, False),
        ("llama3.1:8b", False, False),
    ],
)
def test_model_families(model_id: str, reasoning: bool, images: bool) -> None:
    family = model_family(model_id)

    assert (family.is_reasoning_model, family.supports_images) == (reasoning, images)
    assert responses_capabilities(model_id).reasoning_history is reasoning


# --- usage and stream states -------------------------------------------------------------------


def test_usage_counts_that_are_absent_stay_none() -> None:
    usage = responses_usage({"input_tokens": 10, "output_tokens_details": {"reasoning_tokens": 4}})

    assert (usage.input_tokens.total, usage.input_tokens.cache_read, usage.input_tokens.no_cache) == (10, None, None)
    assert (usage.output_tokens.total, usage.output_tokens.reasoning, usage.output_tokens.text) == (None, 4, None)
    assert chat_usage(None).input_tokens.total is None


def test_chat_usage_subtracts_cache_reads_and_writes() -> None:
    usage = chat_usage(
        {
            "prompt_tokens": 100,
            "completion_tokens": 50,
            "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 10},
            "completion_tokens_details": {"reasoning_tokens": 20},
        }
    )

    assert (usage.input_tokens.no_cache, usage.input_tokens.cache_read, usage.input_tokens.cache_write) == (30, 60, 10)
    assert usage.output_tokens.text == 30


def test_responses_state_opens_text_for_a_delta_without_an_added_item() -> None:
    state = ResponsesStreamState()

    parts = state.process({"type": "response.output_text.delta", "item_id": "m1", "output_index": 0, "delta": "x"})
    state.process({"type": "response.completed", "response": {"id": "r", "status": "completed"}})
    end = state.finish()

    assert [part.type for part in parts] == ["text-start", "text-delta"]
    assert [part.type for part in end] == ["text-end", "finish"]


def test_chat_state_gives_a_tool_call_without_arguments_empty_json() -> None:
    state = ChatStreamState()
    tool_call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "now", "arguments": ""}}

    state.process({"choices": [{"index": 0, "delta": {"tool_calls": [tool_call]}, "finish_reason": "tool_calls"}]})
    parts = state.finish()

    assert parts[1].model_dump(include={"tool_call_id", "input"}) == {"tool_call_id": "c1", "input": "{}"}
