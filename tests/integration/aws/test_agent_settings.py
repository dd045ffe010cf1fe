"""Every `Agent` setting reaches the model call on the durable path, read at the provider's wire.

The run goes through the real ASL on moto with the worker functions in process; the model is
`openai:gpt-4.1-mini`, resolved from its spec as a deployment does, talking Chat Completions to a
local server speaking that wire format. Each setting is checked in the request bodies the server
received, step by step (`prepare_step` changes the second step), not on a model object.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from pydantic import Field

from stepline import Agent, RunContext, Timeouts, is_step_count, tool
from stepline.agent.loading import AgentSet
from stepline.llm.scripted import ScriptedModel
from stepline.loop.config import PrepareStepResult
from stepline.protocol.model_messages import SystemModelMessage
from stepline.runtime.turn import begin_turn
from tests.support.fake_openai import API_KEY, CHAT_PATH, FakeOpenAI, chat_stream, chat_text_chunks
from tests.support.local_aws import local_aws
from tests.support.runs import USER

SEEN: dict[str, list[Any]] = {"start": [], "step_start": [], "step_end": [], "end": [], "tool_start": []}


@tool
def lookup(order_id: Annotated[str, Field(description="Order number")], context: RunContext) -> dict[str, Any]:
    """Look up an order."""
    return {"orderId": order_id, "plan": context.body.get("plan")}


@tool
def other(note: str) -> str:
    """Another tool, listed first by tool_order."""
    return note


@tool
def hidden(x: int) -> int:
    """Not among the active tools: never offered."""
    return x


def instructions(context: RunContext) -> list[SystemModelMessage]:
    return [
        SystemModelMessage(content="You are the order desk."),
        SystemModelMessage(content=f"Plan: {context.body.get('plan')}; user: {context.claims.get('email')}"),
    ]


def prepare(*, step_number: int, **_: Any) -> PrepareStepResult | None:
    return PrepareStepResult(tool_choice="none") if step_number == 1 else None


AGENT = Agent(
    name="orders",
    model="openai:gpt-4.1-mini",
    instructions=instructions,
    tools=[lookup, other, hidden],
    active_tools=["lookup", "other"],
    tool_order=["other"],
    tool_choice="required",
    prepare_step=prepare,
    stop_when=is_step_count(3),
    max_output_tokens=222,
    temperature=0.25,
    top_p=0.8,
    presence_penalty=0.1,
    frequency_penalty=0.2,
    stop_sequences=["STOP"],
    seed=42,
    headers={"x-desk": "orders"},
    provider_options={"openai": {"user": "desk-7"}},
    output_schema={"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
    timeouts=Timeouts(request=12.5),
    max_retries=0,
    on_start=lambda e: SEEN["start"].append(e.runtime_context.body),
    on_step_start=lambda e: SEEN["step_start"].append(e.step_number),
    on_step_end=lambda e: SEEN["step_end"].append(e.step.step_number),
    on_tool_execution_start=lambda e: SEEN["tool_start"].append(e.tool_name),
    on_end=lambda e: SEEN["end"].append(e.text),
)


def tool_call_chunks(call_id: str, name: str, arguments: str) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-t", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "gpt-4.1-mini"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": None}

    call = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return [chunk({"role": "assistant", "content": None, "tool_calls": [call]}), chunk({}, "tool_calls")]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responses_api=False) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        for value in SEEN.values():
            value.clear()
        yield server


def test_every_agent_setting_reaches_the_wire_on_the_durable_path(fake: FakeOpenAI) -> None:
    fake.chat(
        chat_stream(tool_call_chunks("call_1", "lookup", '{"order_id":"A-7"}')),
        chat_stream(chat_text_chunks('{"answer":"A-7 is on its way"}', model="gpt-4.1-mini")),
    )
    with local_aws(ScriptedModel(steps=[]), agents=AgentSet.single(AGENT)) as aws:
        begin_turn(
            aws.services,
            USER,
            conversation_id="conv-1",
            run_id="run-settings",
            assistant_message_id="msg-1",
            user_message={"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Where is A-7?"}]},
            claims={"sub": USER, "email": "alice@example.com"},
            body={"plan": "gold"},
        )
        run = aws.wait_run(USER, "run-settings", lambda r: r.status == "completed")
        assert aws.wait_execution("run-settings") == "SUCCEEDED"  # FinalizeRun returned: on_end has fired
        assert aws.services.model_for(AGENT)._timeout == 12.5  # the request timeout reached the client

    first, second = (r.body for r in fake.requests_to(CHAT_PATH))
    for body in (first, second):
        assert body["model"] == "gpt-4.1-mini"
        assert body["messages"][:2] == [
            {"role": "system", "content": "You are the order desk."},
            {"role": "system", "content": "Plan: gold; user: alice@example.com"},
        ]
        assert (body["max_tokens"], body["temperature"], body["top_p"]) == (222, 0.25, 0.8)
        assert (body["presence_penalty"], body["frequency_penalty"], body["stop"], body["seed"]) == (
            0.1,
            0.2,
            ["STOP"],
            42,
        )
        assert body["user"] == "desk-7"
        assert body["response_format"]["type"] == "json_schema"
        assert [t["function"]["name"] for t in body["tools"]] == ["other", "lookup"]  # active, in tool_order
        lookup_definition = next(t["function"] for t in body["tools"] if t["function"]["name"] == "lookup")
        assert lookup_definition["description"] == "Look up an order."
        assert lookup_definition["parameters"]["properties"]["order_id"]["description"] == "Order number"
    assert (first["tool_choice"], second["tool_choice"]) == ("required", "none")  # prepare_step, step 1
    assert all(r.headers.get("x-desk") == "orders" for r in fake.requests_to(CHAT_PATH))
    result = next(m for m in second["messages"] if m["role"] == "tool")
    assert json.loads(result["content"]) == {"orderId": "A-7", "plan": "gold"}
    assert SEEN == {
        "start": [{"plan": "gold"}],
        "step_start": [0, 1],
        "step_end": [0, 1],
        "end": ['{"answer":"A-7 is on its way"}'],
        "tool_start": ["lookup"],
    }
    assert (run.agent, run.agent_fingerprint) == ("orders", AGENT.fingerprint())


def test_the_agents_stop_when_ends_the_run(fake: FakeOpenAI) -> None:
    fake.chat(chat_stream(tool_call_chunks("call_1", "lookup", '{"order_id":"A-8"}')))
    one_step = AGENT.model_copy(update={"stop_when": is_step_count(1)})
    with local_aws(ScriptedModel(steps=[]), agents=AgentSet.single(one_step)) as aws:
        begin_turn(
            aws.services,
            USER,
            conversation_id="conv-2",
            run_id="run-one-step",
            assistant_message_id="msg-2",
            user_message={"id": "u2", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
        )
        run = aws.wait_run(USER, "run-one-step", lambda r: r.status == "completed")
    assert len(fake.requests_to(CHAT_PATH)) == 1 and run.finish_reason == "tool-calls"
    assert SEEN["tool_start"] == ["lookup"]  # the step's tool ran; no second model call
