"""examples/research_desk with script books for models, for the API tests (`tests.support.desk_agents:AGENTS`).

A script book is stateless (its step is the number of assistant messages since the last user
message), as a server needs: the lead asks the researcher and the writer at once, then answers; the
researcher answers with findings; the writer saves its brief (the person approves), then says so.
"""

from __future__ import annotations

from typing import Any

from examples.research_desk import agents as desk
from stepline import Agent
from stepline.llm.script_book import ScriptBook

FINDINGS = '{"facts": ["Otters use rocks as tools."], "sources": ["otters"]}'
_STOP: dict[str, Any] = {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}}
_CALLS: dict[str, Any] = {"type": "finish", "finishReason": {"unified": "tool-calls", "raw": "tool_use"}, "usage": {}}


def _text(value: str) -> list[dict[str, Any]]:
    delta = {"type": "text-delta", "id": "t", "delta": value}
    return [{"type": "text-start", "id": "t"}, delta, {"type": "text-end", "id": "t"}, _STOP]


def _calls(*calls: tuple[str, str, str]) -> list[dict[str, Any]]:
    parts = [{"type": "tool-call", "toolCallId": i, "toolName": n, "input": v} for i, n, v in calls]
    return [*parts, _CALLS]


def _book(name: str, keyword: str, steps: list[list[dict[str, Any]]]) -> ScriptBook:
    return ScriptBook.from_book({"scripts": [{"name": name, "match": [keyword], "steps": steps}]}, model_id=name)


def _with(agent: Agent, **changes: Any) -> Agent:
    return Agent(**{name: getattr(agent, name) for name in type(agent).model_fields} | changes)


researcher = _with(desk.researcher, model=_book("researcher", "otters", [_text(FINDINGS)]))
writer = _with(
    desk.writer,
    model=_book(
        "writer",
        "notes",
        [_calls(("w1", "save_brief", '{"title": "otters", "text": "Otters use rocks."}')), _text("Saved.")],
    ),
)
_LEAD = {
    "scripts": [
        {
            "name": "brief",
            "match": ["brief"],
            "steps": [
                _calls(("r1", "researcher", '{"topic": "otters"}'), ("w1", "writer", '{"task": "notes: otters"}')),
                _text("Your brief is saved."),
            ],
        },
        {
            "name": "facts",
            "match": ["facts"],
            "steps": [_calls(("r1", "researcher", '{"topic": "otters"}')), _text("Here are the facts.")],
        },
    ]
}
lead = _with(
    desk.lead,
    model=ScriptBook.from_book(_LEAD, model_id="lead"),
    tools=[researcher.as_tool(input=desk.Topic, result="output"), writer.as_tool()],
)
AGENTS = {"lead": lead}
