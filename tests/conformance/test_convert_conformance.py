"""`convert_to_model_messages` against the real `convertToModelMessages` of ai@7.0.173.

Every case is a list of UIMessage wire dicts plus SDK options. The SDK's JSON (URL objects as their
href) must equal `[m.to_wire() for m in convert_to_model_messages(...)]` with default policies.
"""

from __future__ import annotations

from typing import Any

import pytest

from stepline.errors import InvalidUIMessageError, MessageConversionError
from stepline.protocol._ui_validation import validate_ui_messages
from stepline.protocol.convert_json import convert_ui_messages_json
from stepline.protocol.parts import UIMessage
from stepline.protocol.to_model_messages import convert_to_model_messages
from tests.support.sdk_oracle import SdkError, SdkOracle

Json = dict[str, Any]
META = {"anthropic": {"cacheControl": {"type": "ephemeral"}}}
CALL_META = {"openai": {"itemId": "fc_1"}}
RESULT_META = {"openai": {"itemId": "fco_1"}}


def user(*parts: Json) -> Json:
    return {"id": "u", "role": "user", "parts": list(parts)}


def assistant(*parts: Json) -> Json:
    return {"id": "a", "role": "assistant", "parts": list(parts)}


def system(*parts: Json) -> Json:
    return {"id": "s", "role": "system", "parts": list(parts)}


def text(value: str, **extra: Any) -> Json:
    return {"type": "text", "text": value, **extra}


def tool(state: str, call_id: str = "call-1", name: str = "weather", **extra: Any) -> Json:
    return {"type": f"tool-{name}", "toolCallId": call_id, "state": state, **extra}


def dynamic(state: str, call_id: str = "call-d", **extra: Any) -> Json:
    return {"type": "dynamic-tool", "toolName": "lookup", "toolCallId": call_id, "state": state, **extra}


ASK = user(text("What is the weather in Berlin?"))
IN = {"city": "Berlin"}
APPROVED = {"id": "ap-1", "approved": True}
DENIED = {"id": "ap-1", "approved": False, "reason": "not today"}

CASES: list[Any] = [
    pytest.param([user(text("hello"), text("again", providerMetadata=META))], {}, id="user-text"),
    pytest.param(
        [
            user(
                text("see"),
                {"type": "file", "mediaType": "image/png", "url": "HTTPS://Example.COM:443/a/./b/../c.png"},
                {"type": "file", "mediaType": "text/plain", "url": "data:text/plain;base64,aGk=", "filename": "a.txt"},
                {"type": "file", "mediaType": "image/jpeg", "url": "https://example.com", "providerMetadata": META},
            )
        ],
        {},
        id="user-file-urls",
    ),
    pytest.param(
        [
            user(
                {
                    "type": "file",
                    "mediaType": "application/pdf",
                    "url": "https://example.com/doc.pdf",
                    "filename": "doc.pdf",
                    "providerReference": {"openai": "file-abc", "anthropic": "file_01"},
                }
            )
        ],
        {},
        id="user-file-provider-reference",
    ),
    pytest.param(
        [
            user(
                text("a"),
                {"type": "data-weather", "data": {"temp": 20}},
                {"type": "reasoning", "text": "hm"},
                {"type": "source-url", "sourceId": "s1", "url": "https://example.com"},
                {"type": "step-start"},
                text("b"),
            )
        ],
        {},
        id="user-drops-data-and-other-parts",
    ),
    pytest.param(
        [
            system(
                text("You are ", providerMetadata={"a": {"x": 1}}),
                text("helpful.", providerMetadata={"b": {"y": 2}, "a": {"z": 3}}),
                {"type": "data-note", "data": 1},
            ),
            ASK,
        ],
        {},
        id="system-provider-metadata-merged",
    ),
    pytest.param([system({"type": "data-note", "data": 1}), ASK], {}, id="system-without-text"),
    pytest.param(
        [
            ASK,
            assistant(
                {"type": "reasoning", "text": "thinking", "providerMetadata": {"anthropic": {"signature": "sig"}}},
                {"type": "reasoning", "text": ""},
                text("It is sunny.", providerMetadata=META, state="done"),
            ),
        ],
        {},
        id="assistant-text-and-reasoning",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                {"type": "step-start"},
                text("Let me check."),
                tool("output-available", input=IN, output={"temp": 20}),
                {"type": "step-start"},
                text("20 degrees."),
                {"type": "step-start"},
            ),
        ],
        {},
        id="steps-split-assistant-and-tool",
    ),
    pytest.param(
        [ASK, assistant(tool("input-streaming", input={"ci": "B"}), text("partial"))], {}, id="input-streaming-skipped"
    ),
    pytest.param([ASK, assistant(tool("input-available", input=IN))], {}, id="input-available"),
    pytest.param(
        [
            ASK,
            assistant(
                tool(
                    "approval-requested",
                    input=IN,
                    approval={"id": "ap-1", "isAutomatic": False, "requestReason": "costly", "signature": "sig"},
                )
            ),
        ],
        {},
        id="approval-requested-kept-after-last-user",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                tool(
                    "approval-responded",
                    input=IN,
                    approval={**APPROVED, "inputSchemaInput": {"city": "Berlin"}, "isAutomatic": True},
                )
            ),
        ],
        {},
        id="approval-responded-approved",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                tool("approval-responded", input=IN, approval=DENIED, callProviderMetadata=CALL_META),
                tool("approval-responded", "call-2", input=IN, approval={"id": "ap-2", "approved": False}),
            ),
        ],
        {},
        id="approval-responded-denied",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                tool("output-available", "c1", input=IN, output="sunny"),
                tool("output-available", "c2", input=IN, output={"temp": 20, "list": [1, None, "x"]}),
                tool("output-available", "c3", input=IN, output=None),
                tool("output-available", "c4", input=IN),
                tool("output-available", "c5", input=IN, output=7, approval=APPROVED | {"id": "ap-5"}),
            ),
        ],
        {},
        id="output-available-string-object-null-missing",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                tool("output-error", "c1", input=IN, errorText="boom", resultProviderMetadata=RESULT_META),
                tool("output-error", "c2", rawInput='{"city": "Ber', errorText="bad input"),
                tool("output-error", "c3", input=None, errorText="null input"),
                tool("output-error", "c4", errorText="x", callProviderMetadata=CALL_META, resultProviderMetadata=META),
            ),
        ],
        {},
        id="output-error",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                tool("output-denied", "c1", input=IN, approval=DENIED),
                tool("output-denied", "c2", input=IN, approval={"id": "ap-2", "approved": False}),
            ),
        ],
        {},
        id="output-denied-with-and-without-reason",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                tool(
                    "output-available",
                    "ws1",
                    "web_search",
                    providerExecuted=True,
                    input={"q": "x"},
                    output=[{"url": "https://a"}],
                    callProviderMetadata=CALL_META,
                    resultProviderMetadata=RESULT_META,
                ),
                tool("output-error", "ws2", "web_search", providerExecuted=True, input={}, errorText="blocked"),
                tool("output-available", "ws3", "code", providerExecuted=True, input={}, output="ok"),
                tool("input-available", "ws4", "code", providerExecuted=True, input={}),
                text("Found it."),
            ),
        ],
        {},
        id="provider-executed-results-stay-in-assistant",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                tool("approval-responded", "p1", "mcp", providerExecuted=True, input={}, approval=APPROVED),
                tool(
                    "approval-responded",
                    "p2",
                    "mcp",
                    providerExecuted=True,
                    input={},
                    approval={"id": "ap-2", "approved": False, "reason": "no"},
                ),
                tool("output-available", "p3", "mcp", providerExecuted=True, input={}, output=1, approval=APPROVED),
            ),
        ],
        {},
        id="provider-executed-with-approval",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                dynamic("output-available", input={"id": 1}, output={"row": 1}),
                dynamic("output-error", "call-e", input={"id": 2}, errorText="nope"),
                dynamic("input-available", "call-i", input={"id": 3}),
            ),
        ],
        {},
        id="dynamic-tools",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                dynamic("output-available", input={}, output={"secret": "raw"}, dynamic=False),
                dynamic("output-error", "call-e", input={}, errorText="err", dynamic=False),
                dynamic("output-available", "call-s", input={}, output="s", dynamic=False, providerExecuted=True),
            ),
        ],
        {},
        id="dynamic-false-tool-no-longer-available",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                text("I need approval."),
                tool("approval-requested", input=IN, approval={"id": "ap-1"}),
                dynamic("approval-requested", input={}, approval={"id": "ap-d"}),
            ),
            user(text("Never mind, tell me a joke.")),
            assistant(tool("approval-requested", "call-late", input=IN, approval={"id": "ap-late"})),
        ],
        {},
        id="approval-requested-before-later-user-dropped",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                tool("input-streaming", "c0"),
                tool("input-available", "c1", input=IN),
                tool("approval-requested", "c2", input=IN, approval={"id": "ap-2"}),
                tool("approval-responded", "c3", input=IN, approval={"id": "ap-3", "approved": True}),
                tool("output-available", "c4", input=IN, output="final"),
                tool("output-available", "c5", input=IN, output="partial", preliminary=True),
                tool("output-error", "c6", input=IN, errorText="e"),
                tool("output-denied", "c7", input=IN, approval={"id": "ap-7", "approved": False}),
                text("tail"),
            ),
        ],
        {"ignoreIncompleteToolCalls": True},
        id="ignore-incomplete-tool-calls",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                {"type": "step-start"},
                tool("output-available", input=IN, output="sunny"),
                {
                    "type": "steering-message",
                    "id": "st-1",
                    "parts": [
                        text("Also check Paris", providerMetadata=META),
                        {"type": "file", "mediaType": "image/png", "url": "https://example.com/p.png"},
                    ],
                },
                {"type": "step-start"},
                text("Paris is rainy."),
            ),
        ],
        {},
        id="steering-message-becomes-user",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                {"type": "source-url", "sourceId": "s1", "url": "https://example.com", "title": "Ex"},
                {"type": "source-document", "sourceId": "s2", "mediaType": "application/pdf", "title": "Doc"},
                text("Cited."),
            ),
        ],
        {},
        id="source-parts-dropped",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                {"type": "custom", "kind": "openai.compaction", "providerMetadata": {"openai": {"id": "c"}}},
                {"type": "custom", "kind": "anthropic.thing"},
            ),
        ],
        {},
        id="custom-parts",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                {"type": "reasoning-file", "mediaType": "image/png", "url": "data:image/png;base64,iVBORw0KGgo="},
                {
                    "type": "reasoning-file",
                    "mediaType": "image/png",
                    "url": "https://Example.com/r.png",
                    "providerMetadata": {"google": {"thoughtSignature": "t"}},
                },
                text("ok"),
            ),
        ],
        {},
        id="reasoning-file",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                {
                    "type": "file",
                    "mediaType": "image/png",
                    "url": "https://example.com/gen.png",
                    "providerReference": {"google": "files/1"},
                    "providerMetadata": META,
                },
                {"type": "file", "mediaType": "image/png", "url": "https://example.com:8080/a b.png?x=1 2#f"},
            ),
        ],
        {},
        id="assistant-file-parts",
    ),
    pytest.param(
        [ASK, assistant({"type": "data-progress", "data": {"pct": 50}}, text("done"))], {}, id="assistant-data-dropped"
    ),
    pytest.param(
        [
            ASK,
            assistant(),
            assistant({"type": "step-start"}),
            assistant({"type": "source-url", "sourceId": "s", "url": "x"}),
        ],
        {},
        id="empty-assistant-messages-omitted",
    ),
    pytest.param(
        [
            ASK,
            assistant(
                tool("output-available", "t1", "get-current-weather", input=None, output="x", providerExecuted=False),
                tool("input-available", "t2", "mcp-server-search", input={}, providerExecuted=None),
            ),
        ],
        {},
        id="dashed-tool-names-null-values",
    ),
    pytest.param(
        [
            user(
                {"type": "file", "mediaType": "image/png", "url": "http://0x7f.1:80/x/../y"},
                {"type": "file", "mediaType": "image/png", "url": "http://[0:0:0:0:0:0:0:1]:8080/"},
                {"type": "file", "mediaType": "image/png", "url": "https://münchen.de/ä?ö=ü#frag"},
                {"type": "file", "mediaType": "image/png", "url": "s3://My-Bucket/Key%20A"},
                {"type": "file", "mediaType": "text/plain", "url": "data:text/plain,hello world"},
                {"type": "file", "mediaType": "image/png", "url": "https://user:pw@example.com/%7Ex"},
            )
        ],
        {},
        id="url-normalisation",
    ),
    pytest.param(
        [
            system(text("sys")),
            user(text("one")),
            assistant({"type": "step-start"}, tool("input-available", "c1", input=IN)),
            user(text("two")),
            assistant(tool("approval-requested", "c2", input=IN, approval={"id": "ap"})),
        ],
        {"ignoreIncompleteToolCalls": True},
        id="ignore-incomplete-across-turns",
    ),
]


@pytest.mark.parametrize(("messages", "options"), CASES)
def test_matches_sdk(sdk: SdkOracle, messages: list[Json], options: Json) -> None:
    expected = sdk.call("convert", messages=messages, options=options)
    converted = convert_to_model_messages(
        [UIMessage.model_validate(message) for message in messages],
        ignore_incomplete_tool_calls=options.get("ignoreIncompleteToolCalls", False),
    )
    assert [message.to_wire() for message in converted] == expected


@pytest.mark.parametrize(
    "url",
    ["/api/prototypes/x.html", "x.png", "//example.com/a.png", "https://", "http://exa mple.com/", "https://h:99999/"],
)
def test_invalid_file_url_raises_like_sdk(sdk: SdkOracle, url: str) -> None:
    messages = [user(text("look"), {"type": "file", "mediaType": "image/png", "url": url})]
    with pytest.raises(SdkError) as sdk_error:
        sdk.call("convert", messages=messages, options={})
    assert sdk_error.value.name == "TypeError"
    with pytest.raises(MessageConversionError, match=r"messages\[0\]\.parts\[1\]"):
        convert_to_model_messages([UIMessage.model_validate(message) for message in messages])


def test_invalid_reasoning_file_url_raises_like_sdk(sdk: SdkOracle) -> None:
    messages = [ASK, assistant(text("x"), {"type": "reasoning-file", "mediaType": "image/png", "url": "r.png"})]
    with pytest.raises(SdkError):
        sdk.call("convert", messages=messages, options={})
    with pytest.raises(MessageConversionError, match=r"messages\[1\]\.parts\[1\].*'r\.png'"):
        convert_to_model_messages([UIMessage.model_validate(message) for message in messages])


def test_case_count() -> None:
    assert len(CASES) >= 24


# --- JSON in, as the SDK takes it: convert_ui_messages_json (what `stepline protocol convert` runs) ----

STATELESS = {"type": "tool-weather", "toolCallId": "call-9", "input": IN}
JSON_CASES: list[Any] = [
    pytest.param(
        [ASK, assistant(text("checking"), STATELESS, tool("output-available", input=IN, output={"t": 1}))],
        {"ignoreIncompleteToolCalls": True},
        id="a tool part without state, under ignoreIncompleteToolCalls",
    ),
    pytest.param(
        [ASK, assistant(STATELESS), user(text("never mind")), assistant(text("ok"))],
        {"ignoreIncompleteToolCalls": True},
        id="a tool part without state before the last user message",
    ),
    pytest.param([ASK, assistant(tool("output-denied", input=IN))], {}, id="output-denied without an approval"),
    pytest.param(
        [ASK, assistant(tool("output-denied", input=IN), text("so I did not"))],
        {"ignoreIncompleteToolCalls": True},
        id="output-denied without an approval, under ignoreIncompleteToolCalls",
    ),
    pytest.param(
        [ASK, assistant(tool("output-denied", input=IN, approval=DENIED))], {}, id="output-denied with its approval"
    ),
]


@pytest.mark.parametrize(("messages", "options"), JSON_CASES)
def test_json_input_the_sdk_converts_is_converted_the_same(sdk: SdkOracle, messages: list[Json], options: Json) -> None:
    expected = sdk.call("convert", messages=messages, options=options)
    ignore = options.get("ignoreIncompleteToolCalls", False)
    converted = convert_ui_messages_json(messages, ignore_incomplete_tool_calls=ignore)
    assert [message.to_wire() for message in converted] == expected


@pytest.mark.parametrize("role", ["tool", "developer", "User"])
def test_an_unknown_role_is_unsupported_role_like_the_sdk(sdk: SdkOracle, role: str) -> None:
    messages = [ASK, {"id": "x", "role": role, "parts": [text("hi")]}]
    with pytest.raises(SdkError) as sdk_error:
        sdk.call("convert", messages=messages, options={})
    assert sdk_error.value.name == "AI_MessageConversionError"
    with pytest.raises(MessageConversionError) as error:
        convert_ui_messages_json(messages)
    assert str(error.value) == sdk_error.value.detail["message"] == f"Unsupported role: {role}"


def test_validation_still_wants_the_approval_of_output_denied(sdk: SdkOracle) -> None:
    """What `validateUIMessages` refuses stays refused there; only the conversion takes it."""
    messages = [ASK, assistant(tool("output-denied", input=IN))]
    with pytest.raises(SdkError):
        sdk.call("validate", messages=messages)
    with pytest.raises(InvalidUIMessageError, match=r"messages\[1\]\.parts\[0\]\.approval"):
        validate_ui_messages(messages)
