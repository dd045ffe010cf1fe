"""Steer, checked at the provider wire: the real `ai@7` Chat (`tests/node/policies_e2e.mjs`) against the
dev server, whose model is the real `openai` or `anthropic` SDK talking to the local wire-format server
(`tests/support/fake_openai.py`, `fake_anthropic.py`).

Tab A asks for a long task; the model calls `long_task` (held open by the test's gate); tab B steers.
The next request that reaches the provider carries the steering message as a user message right after
the tool's result, and its answer streams into tab A's same assistant message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.support import fake_anthropic as fa
from tests.support import steer_wire_agent as agent
from tests.support.fake_openai import API_KEY, RESPONSES_PATH, FakeOpenAI, error_reply, responses_stream
from tests.support.fake_openai import responses_text_events as openai_text
from tests.support.node_script import run_node_script
from tests.support.server import Running, config, running

pytestmark = pytest.mark.timeout(120)

TASK, STEER, ANSWER = "do a long task", "please answer in capitals", "OK, THE REPORT IN CAPITALS."
CALL_ID = "call_long_1"


def openai_call(response_id: str) -> list[dict[str, Any]]:
    """A Responses API stream whose one output is a `long_task` function call."""
    response = {"id": response_id, "object": "response", "created_at": 1_700_000_000, "model": "gpt-4.1"}
    arguments = json.dumps({"label": "report"})
    item = {"id": "fc_1", "type": "function_call", "status": "in_progress", "call_id": CALL_ID, "name": "long_task"}
    at = {"item_id": "fc_1", "output_index": 0}
    usage = {"input_tokens": 9, "output_tokens": 3}
    return [
        {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "arguments": ""}},
        {"type": "response.function_call_arguments.delta", **at, "delta": arguments},
        {"type": "response.function_call_arguments.done", **at, "arguments": arguments},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "status": "completed", "arguments": arguments},
        },
        {"type": "response.completed", "response": {**response, "status": "completed", "output": [], "usage": usage}},
    ]


def openai_bodies(fake: FakeOpenAI) -> list[Any]:
    return [r.body for r in fake.requests_to(RESPONSES_PATH) if r.body]  # the API probe's body is {}


def openai_tail(body: dict[str, Any]) -> list[Any]:
    """The last two input items of a Responses request, reduced to what the order shows."""
    return [
        {"output": item["output"], "call_id": item["call_id"]}
        if item.get("type") == "function_call_output"
        else {"role": item["role"], "content": item["content"]}
        for item in body["input"][-2:]
    ]


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Running, Callable[[], list[Any]]]]:
    with FakeOpenAI() as fake:
        fake.responses(
            error_reply(400, "Missing required parameter: 'model'.", code="missing_required_parameter"),  # the probe
            responses_stream(openai_call("resp_1")),
            responses_stream(openai_text(ANSWER, response_id="resp_2")),
        )
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        with running(config("openai:gpt-4.1", STEPLINE_AGENT="tests.support.steer_wire_agent:AGENT")) as live:
            yield live, lambda: openai_bodies(fake)
        fake.assert_all_consumed()


@pytest.fixture
def anthropic_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Running, Callable[[], list[Any]]]]:
    with fa.FakeAnthropic() as fake:
        call = fa.tool_use_block(0, "toolu_long_1", "long_task", '{"label": ', '"report"}')
        fake.reply(
            fa.StreamReply(fa.message(call, stop_reason="tool_use")),
            fa.StreamReply(fa.message(fa.text_block(0, ANSWER[:10], ANSWER[10:]))),
        )
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
        with running(
            config("anthropic:claude-sonnet-4-6", STEPLINE_AGENT="tests.support.steer_wire_agent:AGENT")
        ) as live:
            yield live, lambda: [r.body for r in fake.requests]
        assert fake.unused_replies == 0


def steer_through_the_sdk(server: Running, chat_id: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Tab A's and tab B's reports and the stored chat, after tab B steered tab A's run."""
    agent.GATE.clear()
    scenario = {
        "base": server.url,
        "chatId": chat_id,
        "first": TASK,
        "waitFor": "tool",
        "then": [{"text": STEER, "policy": "steer"}],
    }
    with ThreadPoolExecutor(1) as pool, httpx.Client(base_url=server.url, timeout=30) as http:
        playing = pool.submit(run_node_script, "policies_e2e.mjs", scenario)
        try:
            while not playing.done():  # the tool's step stays open until the steering message is stored
                found = http.get(f"/api/conversations/{chat_id}")
                if found.status_code == 200 and found.json()["waiting"]:
                    break
            assert not playing.done(), playing.result()
        finally:
            agent.GATE.set()
        tab_a, tab_b = playing.result()["tabs"]
        stored = http.get(f"/api/conversations/{chat_id}").json()
    return tab_a, tab_b, stored


def assert_one_steered_message(tab_a: dict[str, Any], tab_b: dict[str, Any], stored: dict[str, Any]) -> None:
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]
    assert [m["role"] for m in tab_a["messages"]] == ["user", "assistant"], "one assistant message in tab A"
    answer = tab_a["messages"][1]
    kinds = [p["type"] for p in answer["parts"] if p["type"] in ("tool-long_task", "steering-message", "text")]
    assert kinds == ["tool-long_task", "steering-message", "text"]
    tool = next(p for p in answer["parts"] if p["type"] == "tool-long_task")
    assert tool["state"] == "output-available" and tool["output"] == "done report"
    steer = next(p for p in answer["parts"] if p["type"] == "steering-message")
    assert steer["id"] == tab_b["messages"][0]["id"] and steer["parts"] == [{"type": "text", "text": STEER}]
    assert [p["text"] for p in answer["parts"] if p["type"] == "text"] == [ANSWER]
    assert answer["parts"] == stored["messages"][1]["parts"], "tab A's SDK state is the stored message"
    assert tab_a["finishes"][-1]["finishReason"] == "stop"
    assert tab_b["status"] == "ready" and tab_b["messages"][1]["id"] == answer["id"], "tab B follows the same message"


def test_openai_sees_the_steering_message_after_the_tool_result(
    openai_server: tuple[Running, Callable[[], list[Any]]],
) -> None:
    server, bodies = openai_server
    before = agent.RUNS["long_task"]
    tab_a, tab_b, stored = steer_through_the_sdk(server, "wire-steer-openai")
    assert_one_steered_message(tab_a, tab_b, stored)
    first, second = bodies()
    assert STEER not in json.dumps(first["input"])
    assert openai_tail(second) == [
        {"output": "done report", "call_id": CALL_ID},
        {"role": "user", "content": [{"type": "input_text", "text": STEER}]},
    ]
    assert agent.RUNS["long_task"] == before + 1


def test_anthropic_sees_the_steering_message_after_the_tool_result(
    anthropic_server: tuple[Running, Callable[[], list[Any]]],
) -> None:
    server, bodies = anthropic_server
    before = agent.RUNS["long_task"]
    tab_a, tab_b, stored = steer_through_the_sdk(server, "wire-steer-anthropic")
    assert_one_steered_message(tab_a, tab_b, stored)
    first, second = bodies()
    assert STEER not in json.dumps(first["messages"])
    assert second["messages"][-1] == {  # Anthropic's one user turn: the tool's result, then the steering text
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_long_1", "content": "done report"},
            {"type": "text", "text": STEER},
        ],
    }
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert agent.RUNS["long_task"] == before + 1
