"""A lead with a run token limit and a researcher that would spend past it, for the API test of a tree's budget.

Script books (stateless, as a server needs): the lead asks the researcher, then answers; the
researcher looks up three times, 2,100 tokens a call, then answers. The lead's `run_tokens` (6,200)
covers the lead's call and the researcher's first two; the third would pass it.
"""

from __future__ import annotations

from typing import Any

from stepline import Agent, tool
from stepline.llm.script_book import ScriptBook

LIMIT = 6200


def _finish(reason: str, input_tokens: int, output_tokens: int) -> dict[str, Any]:
    usage = {"inputTokens": {"total": input_tokens}, "outputTokens": {"total": output_tokens}}
    return {"type": "finish", "finishReason": {"unified": reason, "raw": reason}, "usage": usage}


def _call(call_id: str, name: str, value: str, tokens: tuple[int, int]) -> list[dict[str, Any]]:
    return [
        {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": value},
        _finish("tool-calls", *tokens),
    ]


def _text(value: str, tokens: tuple[int, int]) -> list[dict[str, Any]]:
    delta = {"type": "text-delta", "id": "t", "delta": value}
    return [{"type": "text-start", "id": "t"}, delta, {"type": "text-end", "id": "t"}, _finish("stop", *tokens)]


def _book(name: str, keyword: str, steps: list[list[dict[str, Any]]]) -> ScriptBook:
    return ScriptBook.from_book({"scripts": [{"name": name, "match": [keyword], "steps": steps}]}, model_id=name)


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"{topic}: noted"


_LOOKUPS = [_call(f"l{n}", "lookup", f'{{"topic": "beavers {n}"}}', (2000, 100)) for n in range(3)]
researcher = Agent(
    name="researcher",
    model=_book("researcher", "beavers", [*_LOOKUPS, _text("Beavers build dams.", (2000, 100))]),
    tools=[lookup],
    max_output_tokens=200,
)
lead = Agent(
    name="lead",
    model=_book(
        "lead",
        "research",
        [_call("r1", "researcher", '{"task": "look up beavers"}', (10, 10)), _text("Here is what I found.", (10, 10))],
    ),
    tools=[researcher.as_tool()],
    max_output_tokens=200,
    limits={"run_tokens": LIMIT},
)
AGENTS = {"lead": lead}
