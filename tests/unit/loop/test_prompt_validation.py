"""prompt xor messages, system messages, message validation: all checked before any model call."""

from __future__ import annotations

from typing import Any

import pytest

from stepline.loop.stream_text import InvalidPromptError, stream_text
from stepline.protocol.model_messages import SystemModelMessage, UserModelMessage

from .support import collect, model, run, text_step

USER = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
SYSTEM = {"role": "system", "content": "You are terse."}


def _start(**options: Any) -> Any:
    scripted = model(text_step("ok"))

    async def scenario() -> Any:
        result = stream_text(model=scripted, **options)
        await collect(result)
        return result

    return scripted, scenario


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"prompt": "hi", "messages": [USER]}, "prompt and messages cannot both be given"),
        ({}, "pass exactly one of prompt or messages"),
        ({"messages": [SYSTEM, USER]}, "system messages are not allowed in messages"),
        ({"messages": [{"role": "user", "content": "not a list"}]}, "invalid messages"),
        ({"messages": [{"role": "robot", "content": []}]}, "invalid messages"),
    ],
)
def test_invalid_prompts_are_rejected_before_any_model_call(options: dict[str, Any], message: str) -> None:
    scripted, scenario = _start(**options)
    with pytest.raises(InvalidPromptError, match=message) as caught:
        run(scenario)
    assert caught.value.name == "AI_InvalidPromptError"
    assert scripted.calls == []


def test_a_system_message_is_allowed_when_asked_for() -> None:
    scripted, scenario = _start(messages=[SYSTEM, USER], allow_system_in_messages=True)
    run(scenario)
    prompt = scripted.calls[0].prompt
    assert isinstance(prompt[0], SystemModelMessage) and prompt[0].content == "You are terse."


def test_a_string_prompt_is_one_user_message() -> None:
    scripted, scenario = _start(prompt="What is 2+2?")
    run(scenario)
    assert [m.to_wire() for m in scripted.calls[0].prompt] == [
        {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]}
    ]


def test_messages_may_be_wire_dicts_or_models() -> None:
    scripted, scenario = _start(messages=[UserModelMessage.model_validate(USER), USER])
    run(scenario)
    assert [m.to_wire() for m in scripted.calls[0].prompt] == [USER, USER]


@pytest.mark.parametrize(
    ("instructions", "expected"),
    [
        ("Be brief.", [{"role": "system", "content": "Be brief."}]),
        (
            SystemModelMessage(
                content="cached", provider_options={"anthropic": {"cacheControl": {"type": "ephemeral"}}}
            ),
            [
                {
                    "role": "system",
                    "content": "cached",
                    "providerOptions": {"anthropic": {"cacheControl": {"type": "ephemeral"}}},
                }
            ],
        ),
        (
            [SystemModelMessage(content="one"), SystemModelMessage(content="two")],
            [{"role": "system", "content": "one"}, {"role": "system", "content": "two"}],
        ),
    ],
)
def test_instructions_come_first(instructions: Any, expected: list[dict[str, Any]]) -> None:
    scripted, scenario = _start(prompt="hi", instructions=instructions)
    run(scenario)
    prompt = [m.to_wire() for m in scripted.calls[0].prompt]
    assert prompt[: len(expected)] == expected
    assert prompt[len(expected) :] == [USER]
