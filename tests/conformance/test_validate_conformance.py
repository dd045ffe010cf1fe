"""`validate_ui_messages` against the real `validateUIMessages` of ai@7.0.173.

Accepted inputs must come out identical (the SDK's JSON equals our `to_wire()`, with unknown keys
and Stepline's extension fields stripped by both); rejected inputs must be rejected by both.
NaN/Infinity are not sent: the oracle speaks JSON, which cannot carry them (see the unit tests).
"""

from __future__ import annotations

from typing import Any

import pytest

from stepline.errors import InvalidUIMessageError
from stepline.protocol._ui_validation import validate_ui_messages
from tests.support.sdk_oracle import SdkError, SdkOracle

Json = dict[str, Any]


def user(*parts: Json, **extra: Any) -> Json:
    return {"id": "u1", "role": "user", "parts": list(parts), **extra}


def assistant(*parts: Json, **extra: Any) -> Json:
    return {"id": "a1", "role": "assistant", "parts": list(parts), **extra}


def tool(state: str, **fields: Any) -> Json:
    return {"type": "tool-getWeather", "toolCallId": "call-1", "state": state, **fields}


def dynamic(state: str, **fields: Any) -> Json:
    return {"type": "dynamic-tool", "toolName": "search", "toolCallId": "call-2", "state": state, **fields}


TEXT: Json = {"type": "text", "text": "hi"}
GRANTED: Json = {"id": "ap-1", "approved": True}
DENIED: Json = {"id": "ap-1", "approved": False, "reason": "no"}
PM: Json = {"openai": {"itemId": "x", "n": 1, "nothing": None}}

ACCEPTED: dict[str, list[Json]] = {
    "unknown keys stripped: message createdAt, text id": [user({**TEXT, "id": "t1"}, createdAt="2024-01-01")],
    "extensions stripped: executionStartedAt, approval status/requestedAt/decidedAt": [
        user(TEXT),
        assistant(
            {"type": "step-start"},
            tool(
                "output-available",
                input={"city": "Paris"},
                output={"t": 21},
                executionStartedAt=1700000000000,
                approval={**GRANTED, "status": "approved", "requestedAt": 1, "decidedAt": 2},
            ),
        ),
    ],
    "input-streaming with rawInput and inputEncoding": [
        assistant(tool("input-streaming", input={"ci": None}, rawInput='{"ci', inputEncoding="json"))
    ],
    "input-streaming without input": [assistant(tool("input-streaming"))],
    "input-available, every common field": [
        assistant(
            tool(
                "input-available",
                input={"city": "Paris"},
                title="Weather",
                toolMetadata={"k": [1, None]},
                providerExecuted=False,
                callProviderMetadata=PM,
            )
        )
    ],
    "approval-requested with every request field": [
        assistant(
            tool(
                "approval-requested",
                input={"city": "Paris"},
                approval={
                    "id": "ap-1",
                    "isAutomatic": False,
                    "signature": "sig",
                    "requestReason": "costly",
                    "descriptor": {"label": "x"},
                    "inputSchemaInput": {"city": "Paris"},
                },
            )
        )
    ],
    "approval-responded": [assistant(tool("approval-responded", input={}, approval={**DENIED}))],
    "output-available, preliminary and resultProviderMetadata": [
        assistant(tool("output-available", input={}, output=None, preliminary=True, resultProviderMetadata=PM))
    ],
    "output-error without input, with deprecated rawInput": [
        assistant(tool("output-error", errorText="boom", rawInput="{bad", approval=GRANTED))
    ],
    "output-denied": [assistant(tool("output-denied", input={"city": "Paris"}, approval=DENIED))],
    "per-state keys stripped: rawInput/inputEncoding/preliminary where the state has none": [
        assistant(
            tool("input-available", input={}, rawInput="{}", preliminary=True, resultProviderMetadata=PM),
            tool("output-denied", input={}, approval=DENIED, inputEncoding="json", preliminary=False),
        )
    ],
    "dynamic tool in every state": [
        assistant(
            dynamic("input-streaming", dynamic=False),
            dynamic("input-available", input=1),
            dynamic("approval-requested", input=1, approval={"id": "ap-2"}),
            dynamic("approval-responded", input=1, approval={"id": "ap-2", "approved": True, "reason": "ok"}),
            dynamic("output-available", input=1, output=[1, 2]),
            dynamic("output-error", input=1, errorText="e"),
            dynamic("output-denied", input=1, approval={"id": "ap-2", "approved": False}),
        )
    ],
    "snake_case keys are unknown keys": [
        assistant(tool("input-available", input={}, execution_started_at=5, provider_executed=True))
    ],
    "data parts": [
        user(TEXT, {"type": "data-weather", "id": "d1", "data": {"t": 1}}, {"type": "data-note", "data": None})
    ],
    "assistant message with empty parts": [user(TEXT), assistant()],
    "metadata kept, null included": [user(TEXT, metadata={"a": 1}), assistant(metadata=None)],
    "system message": [{"id": "s1", "role": "system", "parts": [TEXT]}, user(TEXT)],
    "every other part type": [
        user(
            {"type": "file", "mediaType": "image/png", "url": "https://x/a.png", "filename": "a.png"},
            {"type": "file", "mediaType": "text/plain", "url": "data:,x", "providerReference": {"openai": "f1"}},
            TEXT,
        ),
        assistant(
            {"type": "step-start"},
            {"type": "reasoning", "text": "think", "id": "r1", "state": "done", "providerMetadata": PM},
            {"type": "text", "text": "a", "state": "streaming"},
            {"type": "source-url", "sourceId": "s1", "url": "https://x", "title": "X"},
            {"type": "source-document", "sourceId": "s2", "mediaType": "application/pdf", "title": "D"},
            {"type": "reasoning-file", "mediaType": "image/png", "url": "data:,y"},
            {"type": "custom", "kind": "openai.thing", "providerMetadata": PM},
        ),
    ],
    "steering message parts lose text state and citations": [
        assistant(
            {
                "type": "steering-message",
                "id": "st1",
                "parts": [
                    {"type": "text", "text": "also this", "state": "done", "citations": []},
                    {"type": "file", "mediaType": "image/png", "url": "data:,z", "extra": 1},
                ],
            }
        )
    ],
    "text with citations": [
        assistant(
            {
                "type": "text",
                "text": "cited",
                "citations": [
                    {"source": {"type": "source", "sourceType": "url", "id": "s", "url": "u"}, "startIndex": 0},
                ],
            }
        )
    ],
}

REJECTED: dict[str, Any] = {
    "not a list": {"id": "u1"},
    "empty list": [],
    "user message with empty parts": [user()],
    "system message with empty parts": [{"id": "s1", "role": "system", "parts": []}],
    "message without parts": [{"id": "a1", "role": "assistant"}],
    "missing id": [{"role": "user", "parts": [TEXT]}],
    "role tool": [{"id": "t1", "role": "tool", "parts": [TEXT]}],
    "unknown part type": [user({"type": "image", "url": "x"})],
    "part without type": [user({"text": "x"})],
    "unknown tool state": [assistant(tool("running", input={}))],
    "approval-requested with approved": [
        assistant(tool("approval-requested", input={}, approval={"id": "ap-1", "approved": True}))
    ],
    "approval-requested with approved null": [
        assistant(tool("approval-requested", input={}, approval={"id": "ap-1", "approved": None}))
    ],
    "approval-requested with reason": [
        assistant(tool("approval-requested", input={}, approval={"id": "ap-1", "reason": "r"}))
    ],
    "approval-responded without approved": [assistant(tool("approval-responded", input={}, approval={"id": "a"}))],
    "output-denied without approval": [assistant(tool("output-denied", input={}))],
    "output-denied approved true": [assistant(tool("output-denied", input={}, approval=GRANTED))],
    "output-available approved false": [assistant(tool("output-available", input={}, output=1, approval=DENIED))],
    "output-available approval null": [assistant(tool("output-available", input={}, output=1, approval=None))],
    "input-available without input": [assistant(tool("input-available"))],
    "output-available without output": [assistant(tool("output-available", input={}))],
    "input-available with output": [assistant(tool("input-available", input={}, output=1))],
    "input-streaming with approval": [assistant(tool("input-streaming", approval={"id": "a"}))],
    "output-error without errorText": [assistant(tool("output-error", input={}))],
    "output-error with output": [assistant(tool("output-error", input={}, errorText="e", output=1))],
    "input-streaming rawInput not a string": [assistant(tool("input-streaming", rawInput=None))],
    "providerExecuted as a string": [assistant(tool("input-available", input={}, providerExecuted="true"))],
    "dynamic tool without toolName": [
        assistant({"type": "dynamic-tool", "toolCallId": "c", "state": "input-available", "input": {}})
    ],
    "dynamic: true": [assistant(dynamic("input-available", input={}, dynamic=True))],
    "data part without data": [user({"type": "data-x", "id": "d"})],
    "text not a string": [user({"type": "text", "text": 3})],
    "text state null": [user({"type": "text", "text": "x", "state": None})],
    "title null": [assistant(tool("input-available", input={}, title=None))],
    "approval reason null": [
        assistant(tool("output-available", input={}, output=1, approval={**GRANTED, "reason": None}))
    ],
    "steering part of another type": [
        assistant({"type": "steering-message", "id": "s", "parts": [{"type": "reasoning", "text": "t"}]})
    ],
    "second message invalid": [user(TEXT), {"id": "x", "role": "user", "parts": [{"type": "text"}]}],
    "providerMetadata not a record of records": [user({"type": "text", "text": "x", "providerMetadata": {"a": 1}})],
}


@pytest.mark.parametrize("messages", list(ACCEPTED.values()), ids=list(ACCEPTED))
def test_accepted_like_the_sdk(sdk: SdkOracle, messages: list[Json]) -> None:
    expected = sdk.call("validate", messages=messages)
    ours = validate_ui_messages(messages, allow_system=True)
    assert [message.to_wire() for message in ours] == expected


@pytest.mark.parametrize("messages", list(REJECTED.values()), ids=list(REJECTED))
def test_rejected_like_the_sdk(sdk: SdkOracle, messages: Any) -> None:
    with pytest.raises(SdkError) as sdk_error:
        sdk.call("validate", messages=messages)
    assert sdk_error.value.name in ("AI_TypeValidationError", "AI_InvalidArgumentError")
    with pytest.raises(InvalidUIMessageError):
        validate_ui_messages(messages, allow_system=True)


@pytest.mark.parametrize("part_type", ["tool-", "data-"])
def test_bare_prefix_types_like_the_sdk(sdk: SdkOracle, part_type: str) -> None:
    part: Json = {"type": part_type, "toolCallId": "c", "state": "input-available", "input": {}, "data": 1}
    expected = sdk.call("validate", messages=[assistant(part)])
    assert [message.to_wire() for message in validate_ui_messages([assistant(part)])] == expected
