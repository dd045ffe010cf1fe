"""The new-message policies with the real AI SDK client (`ai@7`, `tests/node/policies_e2e.mjs`).

Tab A sends a message; while its run works, other tabs (each a stock `Chat` with
`DefaultChatTransport` and `body: {onNewMessage}`) send theirs. The agent is
`tests.support.control_agents` (a scripted model that records each prompt; a slow tool counting
its runs). The tests compare what each tab's SDK state ends with against the stored chat.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import control_agents as agents
from tests.support.node_script import run_node_script
from tests.support.server import Running, config, running

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running(config(STEPLINE_AGENT="tests.support.control_agents:AGENT")) as live:
        yield live


def play(server: Running, chat_id: str, first: str, *then: tuple[str, str], wait_for: str = "text") -> list[Any]:
    """The tabs' reports (tab A first), after every request of the scenario has ended."""
    scenario = {
        "base": server.url,
        "chatId": chat_id,
        "first": first,
        "waitFor": wait_for,
        "then": [{"text": text, "policy": policy} for text, policy in then],
    }
    return run_node_script("policies_e2e.mjs", scenario)["tabs"]


def stored(server: Running, chat_id: str) -> dict[str, Any]:
    with server.client() as http:
        response = http.get(f"/api/conversations/{chat_id}")
    assert response.status_code == 200, response.text
    return response.json()


def text_of(message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in message["parts"] if p.get("type") == "text")


def test_reject_reaches_the_client_as_an_error_naming_the_run(server: Running) -> None:
    tab_a, tab_b = play(server, "sdk-reject", "answer slowly", ("hi", "reject"))
    chat = stored(server, "sdk-reject")
    assert tab_b["status"] == "error" and "is running in this chat" in tab_b["error"]
    assert tab_a["status"] == "ready" and tab_a["finishes"][-1]["finishReason"] == "stop"
    assert [m["id"] for m in chat["messages"]] == [m["id"] for m in tab_a["messages"]], "nothing of tab B stored"


def test_queue_two_messages_each_tab_gets_its_own_answer_in_order(server: Running) -> None:
    tab_a, tab_b, tab_c = play(
        server, "sdk-queue", "answer slowly", ("first follow-up", "queue"), ("second follow-up", "queue")
    )
    messages = stored(server, "sdk-queue")["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"] * 3
    assert text_of(tab_a["messages"][1]).startswith("Slow answer:") and "w79" in text_of(tab_a["messages"][1])
    for tab, answer, said in ((tab_b, messages[3], "first follow-up"), (tab_c, messages[5], "second follow-up")):
        assert tab["status"] == "ready" and tab["error"] is None
        assert [m["role"] for m in tab["messages"]] == ["user", "assistant"]
        assert tab["messages"][1]["id"] == answer["id"] and text_of(tab["messages"][1]) == f"You said: {said}"
        assert tab["finishes"] == [
            {"messageId": answer["id"], "isAbort": False, "isError": False, "finishReason": "stop"}
        ]
    assert messages[2]["id"] == tab_b["messages"][0]["id"] and messages[4]["id"] == tab_c["messages"][0]["id"]


def test_interrupt_mid_stream_ends_tab_a_aborted_with_its_text_and_answers_tab_b(server: Running) -> None:
    tab_a, tab_b = play(server, "sdk-interrupt", "answer slowly", ("do this instead", "interrupt"))
    messages = stored(server, "sdk-interrupt")["messages"]
    assert tab_a["finishes"][-1]["finishReason"] is None, "the stream ended with the run's abort chunk"
    kept = text_of(tab_a["messages"][1])
    assert kept.startswith("Slow answer:") and "w79" not in kept and kept == text_of(messages[1])
    assert messages[1]["metadata"]["abort"]["reason"] == "new_user_message"
    assert text_of(tab_b["messages"][1]) == "You said: do this instead" == text_of(messages[3])


def test_interrupt_mid_tool_finishes_the_tool_once(server: Running) -> None:
    before = agents.RUNS["slow_step"]
    tab_a, tab_b = play(server, "sdk-interrupt-tool", "use the slow tool", ("never mind", "interrupt"), wait_for="tool")
    messages = stored(server, "sdk-interrupt-tool")["messages"]
    assert agents.RUNS["slow_step"] == before + 1
    tool = next(p for p in tab_a["messages"][1]["parts"] if p["type"] == "tool-slow_step")
    assert tool["state"] == "output-available" and tool["output"] == "done one", "tab A saw the result"
    assert tab_a["finishes"][-1]["finishReason"] is None and "The slow tool is done." not in text_of(messages[1])
    assert text_of(tab_b["messages"][1]) == "You said: never mind"


def test_steer_is_read_by_the_model_and_streams_into_tab_as_message(server: Running) -> None:
    with agents.task_held_until(lambda: agents.steer_waiting(server, "sdk-steer")):  # not a race with the task's step
        tab_a, tab_b = play(server, "sdk-steer", "do a long task", ("please answer in capitals", "steer"))
    messages = stored(server, "sdk-steer")["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    answer = tab_a["messages"][1]
    assert [m["role"] for m in tab_a["messages"]] == ["user", "assistant"], "one assistant message in tab A"
    kinds = [p["type"] for p in answer["parts"] if p["type"] in ("tool-slow_step", "steering-message", "step-start")]
    assert kinds == ["step-start", "tool-slow_step", "steering-message", "step-start"]
    steer = next(p for p in answer["parts"] if p["type"] == "steering-message")
    assert steer["id"] == tab_b["messages"][0]["id"]
    assert steer["parts"] == [{"type": "text", "text": "please answer in capitals"}]
    assert text_of(answer).endswith("OK, STEERED INTO CAPITALS.") and answer["parts"] == messages[1]["parts"]
    assert agents.PROMPTS[-1][-2:] == ["do a long task", "please answer in capitals"]
    assert tab_b["status"] == "ready" and tab_b["messages"][1]["id"] == answer["id"], "tab B follows the same message"
