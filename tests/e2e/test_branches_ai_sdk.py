"""Edit and branch with the real AI SDK client (`ai@7`, `tests/node/branches_e2e.mjs`) against `stepline dev`.

One stock `Chat` sends three messages, edits the second (`sendMessage({ text, messageId })`),
regenerates the first answer (`regenerate({ messageId })`), switches back to the first answer (whose
branch is the edited one, as last seen) and then to the original second message
(`POST /api/conversations/{id}/branch`, as the web UI does), and sends one more there. The agent is
`tests.support.control_agents` (a scripted model that records each prompt: what the model saw).
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


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return ["".join(p.get("text", "") for p in m["parts"] if p.get("type") == "text") for m in messages]


def test_edit_regenerate_and_switch_through_the_sdks_own_calls(server: Running) -> None:
    before = len(agents.PROMPTS)
    stages = run_node_script("branches_e2e.mjs", {"base": server.url, "chatId": "sdk-branches"})["stages"]
    prompts = agents.PROMPTS[before:]
    with server.client() as http:
        stored = http.get("/api/conversations/sdk-branches").json()
    for name, stage in stages.items():
        assert stage["status"] == "ready" and stage["error"] is None, (name, stage)
    assert texts(stages["sent"]["messages"]) == [
        "one",
        "You said: one",
        "two",
        "You said: two",
        "three",
        "You said: three",
    ]
    assert texts(stages["edited"]["messages"]) == ["one", "You said: one", "two edited", "You said: two edited"]
    assert prompts[3] == ["one", "two edited"], "the edited turn's model saw the history up to the edit, not 'three'"
    assert texts(stages["regenerated"]["messages"]) == ["one", "You said: one"]
    assert stages["regenerated"]["messages"][1]["id"] != stages["sent"]["messages"][1]["id"]
    assert prompts[4] == ["one"], "the regenerated answer saw only the first message"
    back = stages["switchedBack"]["messages"]
    assert texts(back) == texts(stages["edited"]["messages"]), "the branch the first answer was on, as last seen"
    assert back[2]["id"] != stages["edited"]["messages"][2]["id"], "the server stored the edit under its own id"
    assert texts(stages["switched"]["messages"]) == texts(stages["sent"]["messages"]), "the original branch, whole"
    assert [m["id"] for m in stages["switched"]["messages"]] == [m["id"] for m in stages["sent"]["messages"]]
    assert prompts[5] == ["one", "two", "three", "four"], "the next turn continues the branch switched to"
    assert texts(stored["messages"]) == [*texts(stages["sent"]["messages"]), "four", "You said: four"]
    assert [m["id"] for m in stored["messages"]] == [m["id"] for m in stages["continued"]["messages"]]
    first, second = stored["branches"]
    assert first["parentId"] == stored["messages"][0]["id"] and first["activeId"] == stored["messages"][1]["id"]
    assert second["parentId"] == stored["messages"][1]["id"] and second["activeId"] == stored["messages"][2]["id"]
    assert len(first["siblingIds"]) == len(second["siblingIds"]) == 2
