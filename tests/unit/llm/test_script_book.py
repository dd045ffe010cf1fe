"""The script book: a scripted model chosen by the prompt alone (keyword, then assistant messages
since the last user message), and the demo book played through the real loop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from stepline.llm.base import FunctionTool, ModelCallOptions
from stepline.llm.errors import ModelCallError
from stepline.llm.registry import DEMO_BOOK, DEMO_SCRIPT, resolve_model
from stepline.llm.script_book import ScriptBook, ScriptBookError
from stepline.llm.scripted import ScriptedModel, ScriptExhaustedError
from stepline.llm.stream_parts import ModelStreamPart, V4TextDelta, V4ToolCall, V4ToolInputDelta
from stepline.loop.approval import ApprovalDecision
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import StreamTextResult, stream_text
from stepline.protocol import stream_parts as sp
from stepline.protocol._json import loads_strict
from stepline.protocol.model_messages import (
    AssistantModelMessage,
    ModelMessage,
    ModelTextPart,
    TextOutput,
    ToolCallPart,
    ToolModelMessage,
    ToolResultPart,
    UserModelMessage,
)
from stepline.store.blobs import MemoryBlobStore
from stepline.store.memory import MemoryStore
from stepline.tools.context import RunContext
from stepline.tools.workspace import TOOL_APPROVAL, TOOLS
from tests.unit.loop.support import collect, run


def say(text: str) -> list[dict[str, Any]]:
    """A step that answers `text`."""
    return [
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}},
    ]


BOOK: dict[str, Any] = {
    "description": "test book",
    "scripts": [
        {"name": "weather", "match": ["weather", "Forecast"], "steps": [say("weather 0"), say("weather 1")]},
        {"name": "files", "match": ["file"], "steps": [say("files 0")]},
    ],
    "fallback": {"steps": [say("fallback 0")]},
}


def user(text: str) -> UserModelMessage:
    return UserModelMessage(content=[ModelTextPart(text=text)])


def assistant(text: str = "…") -> AssistantModelMessage:
    return AssistantModelMessage(content=[ModelTextPart(text=text)])


def tool_result(call_id: str = "c1") -> ToolModelMessage:
    return ToolModelMessage(
        content=[ToolResultPart(tool_call_id=call_id, tool_name="x", output=TextOutput(value="done"))]
    )


def play(model: ScriptBook, prompt: list[ModelMessage], tools: tuple[str, ...] = ("x",)) -> list[ModelStreamPart]:
    offered = [FunctionTool(name=name, input_schema={"type": "object"}) for name in tools]

    async def go() -> list[ModelStreamPart]:
        return [part async for part in model.stream(ModelCallOptions(prompt=prompt, tools=offered))]

    return asyncio.run(go())


def said(model: ScriptBook, prompt: list[ModelMessage]) -> str:
    return "".join(getattr(p, "delta", "") for p in play(model, prompt) if p.type == "text-delta")


def test_the_first_script_with_a_keyword_in_the_last_user_message_plays() -> None:
    book = ScriptBook.from_book(BOOK)
    assert said(book, [user("What's the WEATHER like?")]) == "weather 0"
    assert said(book, [user("any forecast, and a file?")]) == "weather 0"  # first script in book order
    assert said(book, [user("list my files")]) == "files 0"
    # Only the last user message counts, not earlier ones or assistant text.
    assert said(book, [user("weather?"), assistant("weather"), user("hello")]) == "fallback 0"


def test_the_step_is_the_number_of_assistant_messages_after_the_last_user_message() -> None:
    book = ScriptBook.from_book(BOOK)
    earlier_turn: list[ModelMessage] = [user("a file please"), assistant(), tool_result(), assistant()]
    assert said(book, [*earlier_turn, user("weather")]) == "weather 0"
    assert said(book, [*earlier_turn, user("weather"), assistant(), tool_result()]) == "weather 1"
    choice = book.choose([user("weather"), assistant(), tool_result()])
    assert (choice.script.name, choice.step_index, choice.last_user_text) == ("weather", 1, "weather")


def test_nothing_matching_plays_the_fallback_and_without_one_fails_clearly() -> None:
    book = ScriptBook.from_book(BOOK)
    assert said(book, [user("hello there")]) == "fallback 0"
    assert said(book, []) == "fallback 0"  # no user message at all
    strict = ScriptBook.from_book({"scripts": BOOK["scripts"]}, model_id="strict")
    with pytest.raises(ScriptExhaustedError, match="script book strict: no script matches .* no fallback"):
        play(strict, [user("hello")])


def test_a_call_past_the_end_of_a_script_fails_instead_of_inventing_output() -> None:
    book = ScriptBook.from_book(BOOK)
    prompt: list[ModelMessage] = [user("weather"), assistant(), tool_result(), assistant(), tool_result()]
    with pytest.raises(ScriptExhaustedError) as caught:
        play(book, prompt)
    assert str(caught.value) == (
        "script book script-book: script 'weather' has 2 steps, "
        "but the prompt already has 2 assistant messages after the last user message"
    )


def test_the_same_prompt_gives_the_same_output_in_any_instance() -> None:
    prompt: list[ModelMessage] = [user("the weather, please"), assistant(), tool_result()]
    first, second = ScriptBook.from_book(BOOK), ScriptBook.from_book(BOOK)
    played = [play(first, prompt) for _ in range(3)]
    assert played[0] == played[1] == played[2] == play(second, prompt)
    assert said(first, prompt) == "weather 1"


def test_steps_keep_the_scripted_directives_delay_and_raise() -> None:
    book = ScriptBook.from_book(
        {
            "scripts": [
                {"name": "slow", "match": ["slow"], "steps": [{"delayMs": 1, "parts": say("late")}]},
                {"name": "fail", "match": ["fail"], "steps": [{"raise": {"kind": "rate_limit", "status": 429}}]},
            ]
        }
    )
    assert said(book, [user("slow")]) == "late"
    with pytest.raises(ModelCallError) as caught:
        play(book, [user("fail")])
    assert (caught.value.kind, caught.value.status_code, caught.value.provider) == ("rate_limit", 429, "scripted")


def test_the_last_user_text_is_substituted_and_json_escaped_in_tool_input() -> None:
    text = 'He said "hi"\\ and left\n'
    book = ScriptBook.from_book(
        {
            "scripts": [],
            "fallback": {
                "steps": [
                    [
                        {"type": "text-delta", "id": "t", "delta": "You said: {{last_user_text}}"},
                        {"type": "tool-input-delta", "id": "c", "delta": '{"note":"{{last_user_text}}"}'},
                        {
                            "type": "tool-call",
                            "toolCallId": "c",
                            "toolName": "x",
                            "input": '{"q":"{{last_user_text}}"}',
                        },
                    ]
                ]
            },
        }
    )
    delta, input_delta, tool_call = play(book, [user(text)])
    assert isinstance(delta, V4TextDelta) and delta.delta == f"You said: {text}"
    assert isinstance(input_delta, V4ToolInputDelta) and loads_strict(input_delta.delta) == {"note": text}
    assert isinstance(tool_call, V4ToolCall) and loads_strict(tool_call.input) == {"q": text}


def test_a_script_calling_a_tool_the_agent_lacks_answers_in_text_naming_the_tool() -> None:
    book = ScriptBook.from_book(
        {
            "scripts": [
                {
                    "name": "go",
                    "match": ["go"],
                    "steps": [[{"type": "tool-call", "toolCallId": "c", "toolName": "x", "input": "{}"}]],
                }
            ]
        }
    )
    parts = play(book, [user("go")], tools=("y", "z"))
    assert not any(isinstance(p, V4ToolCall) for p in parts)
    assert "calls x, which this agent does not have (its tools: y, z)" in said_from(parts)


def said_from(parts: list[ModelStreamPart]) -> str:
    return "".join(getattr(p, "delta", "") for p in parts if p.type == "text-delta")


@pytest.mark.parametrize(
    ("book", "message"),
    [
        ([], "a script book is an object with a 'scripts' list"),
        ({"scripts": [{"name": "a", "steps": [[]]}]}, "scripts[0].match: a script needs at least one keyword"),
        ({"scripts": [{"name": "a", "match": ["", "x"], "steps": [[]]}]}, "scripts[0].match: expected a list"),
        ({"scripts": [{"match": ["x"], "steps": [[]]}]}, "scripts[0].name: a script needs a non-empty name"),
        ({"scripts": [{"name": "a", "match": ["x"], "steps": []}]}, "scripts[0].steps: expected a non-empty list"),
        ({"scripts": [], "fallback": {"steps": [[{"type": "nope"}]]}}, "fallback.steps[0]: "),
    ],
)
def test_a_malformed_book_names_the_place(book: Any, message: str) -> None:
    with pytest.raises(ScriptBookError) as caught:
        ScriptBook.from_book(book)
    assert str(caught.value).startswith(message)


def test_the_registry_loads_a_book_by_its_scripts_key_and_a_script_otherwise() -> None:
    demo = resolve_model(f"scripted:{DEMO_BOOK}")
    assert isinstance(demo, ScriptBook) and demo.model_id == "demo-book" and demo.fallback is not None
    assert [s.name for s in demo.scripts] == ["list-files", "save-artifact", "ask-user", "write-note"]
    assert isinstance(resolve_model(f"scripted:{DEMO_SCRIPT}"), ScriptedModel)
    tools = {t.name for t in TOOLS}
    for script in demo.scripts:  # the demo only calls tools of the default toolset
        for step in script.steps:
            assert {p.tool_name for p in step.parts if isinstance(p, V4ToolCall)} <= tools, script.name


# --- the demo book through the real loop -----------------------------------------------------------


def test_the_demo_fallback_says_it_is_a_scripted_demo() -> None:
    book = ScriptBook.from_file(DEMO_BOOK)
    answer = said(book, [user("Hello!")])
    assert "Stepline's scripted demo" in answer and "no model API key is set" in answer
    for prompt in ("Write a note", "List my files", "Save the note as an artifact", "Ask me a question"):
        assert prompt in answer
    assert book.choose([user("Write a note")]).script.name == "write-note"
    assert book.choose([user("List my files")]).script.name == "list-files"
    assert book.choose([user("Save the note as an artifact")]).script.name == "save-artifact"
    assert book.choose([user("Ask me a question")]).script.name == "ask-user"


@pytest.mark.parametrize("approved", [True, False])
def test_the_demo_write_script_runs_with_the_workspace_tools_and_an_approval(approved: bool) -> None:
    store, blobs = MemoryStore(), MemoryBlobStore()
    runtime = RunContext(user_id="u1", conversation_id="c1", run_id="r1", message_id="m1", store=store, blobs=blobs)
    options: dict[str, Any] = {
        "tools": TOOLS,
        "tool_approval": TOOL_APPROVAL,
        "runtime_context": runtime,
        "stop_when": is_step_count(10),
    }

    async def first() -> StreamTextResult:
        # A fresh instance per request, as a server or a Lambda invocation has.
        result = stream_text(model=ScriptBook.from_file(DEMO_BOOK), prompt='Write a note "now"', **options)
        await collect(result)
        return result

    paused = run(first)
    assert paused.outcome is not None and paused.outcome.kind == "await-approval"
    (pending,) = paused.state.pending_approvals
    assert pending.tool_call.tool_name == "write_file" and pending.tool_call.input["path"] == "notes/hello.md"
    assert blobs.list_keys("users/") == []

    async def second() -> tuple[StreamTextResult, list[sp.TextStreamPart]]:
        decision = ApprovalDecision(approval_id=pending.approval_id, approved=approved, reason=None)
        result = stream_text(
            model=ScriptBook.from_file(DEMO_BOOK), state=paused.state, approval_decisions=[decision], **options
        )
        return result, await collect(result)

    done, parts = run(second)
    assert done.outcome is not None and done.outcome.kind == "finished"
    text = "".join(p.text for p in parts if isinstance(p, sp.TextDelta))
    assert text.startswith("Done — see the tool result above.")
    assert [type(m) for m in done.state.response_messages] == [
        AssistantModelMessage,
        ToolModelMessage,
        AssistantModelMessage,
    ]
    call = next(p for p in done.state.response_messages[0].content if isinstance(p, ToolCallPart))
    assert call.tool_name == "write_file"
    if approved:
        note = blobs.get_object("users/u1/conversations/c1/workspace/notes/hello.md").decode()
        assert note.startswith("# Hello from Stepline") and 'You asked: Write a note "now"' in note
    else:
        assert blobs.list_keys("users/") == []
