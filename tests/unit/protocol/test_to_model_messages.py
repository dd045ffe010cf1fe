from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import JsonValue, TypeAdapter

from stepline.errors import MessageConversionError
from stepline.protocol._model_message_blocks import UNAVAILABLE_TOOL_OUTPUT
from stepline.protocol.model_messages import (
    AssistantModelMessage,
    ContentOutput,
    ModelMessage,
    ModelTextPart,
    ToolModelMessage,
    ToolResultOutput,
    UserModelMessage,
)
from stepline.protocol.parts import DataPart, UIMessage
from stepline.protocol.to_model_messages import LegacyMessage, convert_to_model_messages

Json = dict[str, Any]
SIGNED = {"anthropic": {"signature": "sig"}}


def ui(role: str, *parts: Json) -> UIMessage:
    return UIMessage.model_validate({"id": f"{role}-1", "role": role, "parts": list(parts)})


def wire(messages: list[Any], **options: Any) -> list[Json]:
    return [message.to_wire() for message in convert_to_model_messages(messages, **options)]


def reasoning_turn() -> list[UIMessage]:
    return [
        ui("user", {"type": "text", "text": "hi"}),
        ui(
            "assistant",
            {"type": "reasoning", "text": "let me think", "providerMetadata": SIGNED},
            {"type": "reasoning", "text": "", "providerMetadata": {"openai": {"encrypted": "e"}}},
            {"type": "reasoning-file", "mediaType": "image/png", "url": "https://example.com/r.png"},
            {"type": "text", "text": "hello"},
        ),
    ]


# --- defaults ---------------------------------------------------------------------------------


def test_default_conversion_returns_typed_models() -> None:
    result = convert_to_model_messages(
        [
            ui("user", {"type": "text", "text": "weather?"}),
            ui(
                "assistant",
                {"type": "tool-weather", "toolCallId": "c1", "state": "output-available", "input": {}, "output": "sun"},
            ),
        ]
    )
    assert [type(message) for message in result] == [UserModelMessage, AssistantModelMessage, ToolModelMessage]
    assert result[2].to_wire() == {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": "c1",
                "toolName": "weather",
                "output": {"type": "text", "value": "sun"},
            }
        ],
    }


def test_absent_and_null_fields_stay_distinct() -> None:
    file = {"type": "file", "mediaType": "image/png", "url": "https://example.com/a.png"}
    result = wire([ui("user", file, {**file, "filename": None}, {**file, "filename": "a.png"})])
    assert [("filename" in part, part.get("filename")) for part in result[0]["content"]] == [
        (False, None),
        (True, None),
        (True, "a.png"),
    ]


def test_output_error_without_input_falls_back_to_raw_input() -> None:
    part = {"type": "tool-t", "toolCallId": "c", "state": "output-error", "rawInput": "{bad", "errorText": "oops"}
    result = wire([ui("assistant", part)])
    assert result[0]["content"][0]["input"] == "{bad"
    assert result[1]["content"][0]["output"] == {"type": "error-text", "value": "oops"}


def test_model_message_list_validates_sdk_json() -> None:
    adapter = TypeAdapter(list[ModelMessage])
    sdk_json: list[Json] = [
        {"role": "system", "content": "s", "providerOptions": {"a": {"b": 1}}},
        {
            "role": "user",
            "content": [{"type": "file", "mediaType": "x/y", "data": {"type": "url", "url": "https://a/"}}],
        },
        {"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": "a", "approved": True}]},
    ]
    assert [message.to_wire() for message in adapter.validate_python(sdk_json)] == sdk_json


# --- legacy fallback (spec 000, sub-flow 4) ------------------------------------------------------


def test_legacy_messages_become_single_text_content() -> None:
    result = wire(
        [
            LegacyMessage(role="system", content="Be brief."),
            LegacyMessage.model_validate({"id": "old", "role": "user", "content": "hi", "tool_calls": []}),
            LegacyMessage(role="assistant", content="hello"),
            ui("user", {"type": "text", "text": "now with parts"}),
        ]
    )
    assert result == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        {"role": "user", "content": [{"type": "text", "text": "now with parts"}]},
    ]


def test_legacy_empty_assistant_is_left_out_and_legacy_user_counts_as_last_user() -> None:
    pending = {"type": "tool-t", "toolCallId": "c", "state": "approval-requested", "input": {}, "approval": {"id": "a"}}
    result = wire(
        [ui("assistant", pending), LegacyMessage(role="assistant", content=""), LegacyMessage(role="user", content="")]
    )
    assert result == [{"role": "user", "content": []}]


# --- reasoning policy ---------------------------------------------------------------------------


def assistant_content(result: list[Json]) -> list[Json]:
    return next(message["content"] for message in result if message["role"] == "assistant")


@pytest.mark.parametrize(
    ("options", "kept"),
    [
        ({}, True),
        ({"reasoning": "auto", "model_supports_reasoning": True}, True),
        ({"reasoning": "auto", "model_supports_reasoning": False}, False),
        ({"reasoning": "preserve", "model_supports_reasoning": False}, True),
        ({"reasoning": "drop", "model_supports_reasoning": True}, False),
        ({"reasoning": "strict", "model_supports_reasoning": True}, True),
        ({"reasoning": "strict"}, True),
    ],
)
def test_reasoning_kept_or_dropped(options: Json, kept: bool) -> None:
    content = assistant_content(wire(reasoning_turn(), **options))
    types = [part["type"] for part in content]
    if kept:
        assert types == ["reasoning", "reasoning", "reasoning-file", "text"]
        assert content[0] == {"type": "reasoning", "text": "let me think", "providerOptions": SIGNED}
    else:
        assert types == ["text"]


def test_auto_drop_logs_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="stepline.protocol"):
        wire(reasoning_turn(), model_supports_reasoning=False)
    assert len(caplog.records) == 1
    assert "3 part(s)" in caplog.text
    assert "messages[1].parts[0] (reasoning)" in caplog.text


def test_explicit_drop_does_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="stepline.protocol"):
        wire(reasoning_turn(), reasoning="drop")
    assert caplog.records == []


def test_reasoning_as_text_context() -> None:
    content = assistant_content(wire(reasoning_turn(), reasoning="text"))
    assert content == [{"type": "text", "text": "let me think"}, {"type": "text", "text": "hello"}]


def test_strict_reasoning_fails_for_a_model_without_reasoning() -> None:
    with pytest.raises(MessageConversionError, match=r"messages\[1\]\.parts\[0\].*'reasoning'"):
        convert_to_model_messages(reasoning_turn(), reasoning="strict", model_supports_reasoning=False)


def test_strict_reasoning_passes_without_reasoning_parts() -> None:
    messages = [ui("user", {"type": "text", "text": "a"}), ui("assistant", {"type": "text", "text": "b"})]
    assert len(wire(messages, reasoning="strict", model_supports_reasoning=False)) == 2


# --- unsupported-part policy --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "where", "part_type"),
    [
        (ui("user", {"type": "text", "text": "a"}, {"type": "reasoning", "text": "r"}), "parts[1]", "reasoning"),
        (ui("user", {"type": "data-x", "data": 1}), "parts[0]", "data-x"),
        (ui("system", {"type": "text", "text": "s"}, {"type": "step-start"}), "parts[1]", "step-start"),
        (
            ui("assistant", {"type": "text", "text": "a"}, {"type": "source-url", "sourceId": "s", "url": "https://a"}),
            "parts[1]",
            "source-url",
        ),
    ],
)
def test_unsupported_part_fail_names_position_and_type(message: UIMessage, where: str, part_type: str) -> None:
    messages = [ui("user", {"type": "text", "text": "first"}), message]
    assert wire(messages)  # "skip" (the default) converts without complaint
    with pytest.raises(MessageConversionError) as error:
        convert_to_model_messages(messages, unsupported_parts="fail")
    assert f"messages[1].{where}" in str(error.value)
    assert repr(part_type) in str(error.value)


def test_skipped_parts_are_summarised_but_sources_are_not(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="stepline.protocol"):
        wire(
            [
                ui(
                    "assistant",
                    {"type": "source-url", "sourceId": "s", "url": "https://a"},
                    {"type": "text", "text": "t"},
                )
            ]
        )
    assert caplog.records == []
    with caplog.at_level(logging.WARNING, logger="stepline.protocol"):
        wire([ui("user", {"type": "data-x", "data": 1})])
    assert "messages[0].parts[0] (data-x)" in caplog.text


# --- data parts and tools -----------------------------------------------------------------------


def test_data_part_converter_in_user_and_assistant_messages() -> None:
    seen: list[str] = []

    def convert(part: DataPart) -> ModelTextPart | None:
        seen.append(part.type)
        return None if part.type == "data-hidden" else ModelTextPart(text=f"data: {part.data}")

    messages = [
        ui("user", {"type": "data-note", "data": "n"}, {"type": "data-hidden", "data": 0}),
        ui("assistant", {"type": "data-note", "data": 2}),
    ]
    result = wire(messages, convert_data_part=convert, unsupported_parts="fail")
    assert seen == ["data-note", "data-hidden", "data-note"]
    assert result == [
        {"role": "user", "content": [{"type": "text", "text": "data: n"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "data: 2"}]},
    ]


class Summarised:
    def __init__(self) -> None:
        self.calls: list[tuple[str, JsonValue, JsonValue]] = []

    def to_model_output(self, tool_call_id: str, input: JsonValue, output: JsonValue) -> ToolResultOutput | Json:
        self.calls.append((tool_call_id, input, output))
        if tool_call_id == "as-dict":
            return {"type": "content", "value": [{"type": "text", "text": "summary"}]}
        return ContentOutput(value=[{"type": "text", "text": "model"}])


def test_tool_to_model_output_is_used_for_successful_outputs_only() -> None:
    tool = Summarised()
    parts: list[Json] = [
        {"type": "tool-search", "toolCallId": "as-dict", "state": "output-available", "input": {"q": 1}, "output": [1]},
        {"type": "tool-search", "toolCallId": "as-model", "state": "output-available", "input": {}, "output": "x"},
        {"type": "tool-search", "toolCallId": "failed", "state": "output-error", "input": {}, "errorText": "e"},
        {"type": "tool-other", "toolCallId": "plain", "state": "output-available", "input": {}, "output": "x"},
    ]
    result = wire([ui("assistant", *parts)], tools={"search": tool})
    outputs = [part["output"] for part in result[1]["content"]]
    assert outputs == [
        {"type": "content", "value": [{"type": "text", "text": "summary"}]},
        {"type": "content", "value": [{"type": "text", "text": "model"}]},
        {"type": "error-text", "value": "e"},
        {"type": "text", "value": "x"},
    ]
    assert tool.calls == [("as-dict", {"q": 1}, [1]), ("as-model", {}, "x")]


def test_unavailable_dynamic_tool_output_only_when_tool_is_unknown() -> None:
    part = {
        "type": "dynamic-tool",
        "toolName": "lookup",
        "toolCallId": "c",
        "state": "output-available",
        "input": {},
        "output": {"raw": 1},
        "dynamic": False,
    }
    unknown = wire([ui("assistant", part)])
    assert unknown[1]["content"][0]["output"] == {"type": "text", "value": UNAVAILABLE_TOOL_OUTPUT}
    known = wire([ui("assistant", part)], tools={"lookup": object()})
    assert known[1]["content"][0]["output"] == {"type": "json", "value": {"raw": 1}}


# --- file URLs ----------------------------------------------------------------------------------


def test_relative_file_url_names_message_part_and_url() -> None:
    messages = [
        ui("user", {"type": "text", "text": "a"}),
        ui("user", {"type": "text", "text": "b"}, {"type": "file", "mediaType": "text/html", "url": "/api/x.html"}),
    ]
    with pytest.raises(MessageConversionError, match=r"^messages\[1\]\.parts\[1\]: invalid file URL '/api/x\.html'"):
        convert_to_model_messages(messages)


def test_relative_url_inside_a_steering_message_names_the_nested_part() -> None:
    steering = {
        "type": "steering-message",
        "id": "s",
        "parts": [{"type": "text", "text": "t"}, {"type": "file", "mediaType": "image/png", "url": "p.png"}],
    }
    with pytest.raises(MessageConversionError, match=r"messages\[0\]\.parts\[0\]\.parts\[1\]"):
        convert_to_model_messages([ui("assistant", steering)])


def test_provider_reference_skips_url_parsing() -> None:
    part = {"type": "file", "mediaType": "a/b", "url": "relative.bin", "providerReference": {"openai": "file-1"}}
    result = wire([ui("user", part)])
    assert result[0]["content"][0]["data"] == {"type": "reference", "reference": {"openai": "file-1"}}


@pytest.mark.parametrize(
    ("url", "href"),
    [
        ("HTTPS://Example.COM", "https://example.com/"),
        ("https://example.com:443/a/./b/../c", "https://example.com/a/c"),
        ("data:image/png;base64,iVBORw0KGgo=", "data:image/png;base64,iVBORw0KGgo="),
        ("https://example.com/a b?c d", "https://example.com/a%20b?c%20d"),
    ],
)
def test_file_urls_are_normalised_like_javascript(url: str, href: str) -> None:
    result = wire([ui("user", {"type": "file", "mediaType": "image/png", "url": url})])
    assert result[0]["content"][0]["data"] == {"type": "url", "url": href}


# --- empty-message policy -----------------------------------------------------------------------


def only_source() -> UIMessage:
    return ui("user", {"type": "source-url", "sourceId": "s", "url": "https://a"})


def test_empty_messages_keep_is_the_sdk_behaviour() -> None:
    result = wire([only_source(), ui("system", {"type": "data-x", "data": 1}), ui("assistant", {"type": "step-start"})])
    assert result == [{"role": "user", "content": []}, {"role": "system", "content": ""}]


def test_empty_messages_skip() -> None:
    messages = [only_source(), ui("system", {"type": "data-x", "data": 1}), ui("user", {"type": "text", "text": "x"})]
    assert wire(messages, empty_messages="skip") == [{"role": "user", "content": [{"type": "text", "text": "x"}]}]


@pytest.mark.parametrize(
    "message",
    [
        only_source(),
        ui("assistant", {"type": "step-start"}),
        ui("assistant"),
        ui("assistant", {"type": "steering-message", "id": "s", "parts": []}, {"type": "text", "text": "t"}),
        LegacyMessage(role="user", content=""),
    ],
)
def test_empty_messages_fail_names_the_message(message: UIMessage | LegacyMessage) -> None:
    messages = [ui("user", {"type": "text", "text": "ok"}), message]
    with pytest.raises(MessageConversionError, match=r"^messages\[1\]: "):
        convert_to_model_messages(messages, empty_messages="fail")


def test_empty_messages_fail_accepts_messages_with_content() -> None:
    messages = [
        ui("user", {"type": "text", "text": "ok"}),
        ui("assistant", {"type": "step-start"}, {"type": "text", "text": "t"}),
    ]
    assert len(wire(messages, empty_messages="fail")) == 2
