"""The chat calls of the restart tests, over HTTP only: the bodies the AI SDK sends, and the reads of a
conversation and its runs that a test makes from outside the killed server."""

from __future__ import annotations

from typing import Any

import httpx


def user(text: str, message_id: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def body(chat: str, text: str, message_id: str, policy: str | None = None) -> dict[str, Any]:
    """`sendMessage({ text })`: one new user message (under `policy` when given)."""
    sent: dict[str, Any] = {"id": chat, "messages": [user(text, message_id)], "trigger": "submit-message"}
    return sent if policy is None else {**sent, "onNewMessage": policy}


def conversation(client: httpx.Client, chat: str) -> dict[str, Any]:
    response = client.get(f"/api/conversations/{chat}")
    assert response.status_code == 200, response.text
    return response.json()


def text_of(message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in message["parts"] if p["type"] == "text")


def switch(client: httpx.Client, chat: str, message_id: str) -> dict[str, Any]:
    """Make the branch through `message_id` the active one; the conversation as it then is."""
    response = client.post(f"/api/conversations/{chat}/branch", json={"messageId": message_id})
    assert response.status_code == 200, response.text
    return response.json()


def run_status(client: httpx.Client, run_id: str) -> str:
    response = client.get(f"/api/runs/{run_id}")
    assert response.status_code == 200, response.text
    return response.json()["status"]
