"""Several agents behind one deployment: listing, choosing one per chat, keeping it, and refusing a bad name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.server import Running, config, running


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running(config(STEPLINE_AGENT="tests.support.team_agents:AGENTS")) as server:
        yield server


def chat(server: Running, chat_id: str, text: str, message_id: str, **body: Any) -> Any:
    message = {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}
    payload = {"id": chat_id, "messages": [message], "trigger": "submit-message", **body}
    with server.client() as http:
        return http.post("/api/chat", json=payload)


def answer_text(response: Any) -> str:
    return "".join(
        line.split('"delta":"')[1].split('"')[0] for line in response.text.splitlines() if '"text-delta"' in line
    )


def test_the_agents_are_listed_without_anything_secret(server: Running) -> None:
    with server.client() as http:
        listed = http.get("/api/agents").json()
    assert listed == {
        "default": "sales",
        "agents": [
            {
                "name": "sales",
                "description": "Answers questions about plans",
                "model": "scripted:sales-book",
                "tools": [],
            },
            {
                "name": "billing",
                "description": "Refunds and invoices",
                "model": "scripted:billing-book",
                "tools": [
                    {
                        "name": "refund",
                        "description": "Refund an amount, in cents.",
                        "approval": "required",
                        "clientSide": False,
                    }
                ],
            },
        ],
    }


def test_a_new_chat_names_its_agent_and_keeps_it_for_its_life(server: Running) -> None:
    first = chat(server, "chat-billing", "hello", "m1", agent="billing")
    assert first.status_code == 200 and answer_text(first) == "billing here."
    later = chat(server, "chat-billing", "again", "m2", agent="sales")  # a chat's agent is fixed
    assert later.status_code == 200 and answer_text(later) == "billing here."
    with server.client() as http:
        assert http.get("/api/conversations/chat-billing").json()["agent"] == "billing"
        listed = http.get("/api/conversations").json()["conversations"]
    assert {c["id"]: c["agent"] for c in listed}["chat-billing"] == "billing"


def test_a_chat_that_names_no_agent_gets_the_default(server: Running) -> None:
    response = chat(server, "chat-default", "hi", "m1")
    assert response.status_code == 200 and answer_text(response) == "sales here."


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ("support", "agent: no agent named 'support' (this deployment has: sales, billing)"),
        (7, "agent: must be the name of an agent (a string)"),
    ],
)
def test_an_unknown_agent_is_a_400_naming_it_and_nothing_is_written(server: Running, agent: Any, message: str) -> None:
    response = chat(server, f"chat-bad-{agent}", "hi", "m1", agent=agent)
    assert response.status_code == 400
    assert message in response.text
    with server.client() as http:
        assert http.get(f"/api/conversations/chat-bad-{agent}").status_code == 404
