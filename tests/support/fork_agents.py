"""An agent for the fork tests (`STEPLINE_AGENT=tests.support.fork_agents:AGENT`).

A scripted model that counts its calls (`CALLS`) and records each prompt's shape, and two tools
that count how often their bodies really run (`RUNS`): `gather` needs no approval, `send_report`
does. Asked to "send the report", the model gathers (step 0), asks to send (step 1), then answers
(step 2) "Not sent." after a denial or "Sent." after the tool ran. Asked a question ("ask me"), it
calls the client-side `pick_colour` and answers with the colour the person picked.
The server runs in the test's process, so a test reads the counters.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

from stepline import Agent, tool
from stepline.llm.base import ModelCallOptions
from stepline.llm.script_book import ScriptBook
from stepline.llm.stream_parts import ModelStreamPart
from stepline.loop.tools import Tool

CALLS: list[str] = []
"""The script step each model call played (`report:0`, …), in order."""
RUNS: Counter[str] = Counter()

_FINISH: dict[str, Any] = {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}}
_CALLS: dict[str, Any] = {"type": "finish", "finishReason": {"unified": "tool-calls", "raw": "tool_use"}, "usage": {}}


def _text(text: str) -> dict[str, Any]:
    return {
        "parts": [
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": text},
            {"type": "text-end", "id": "t"},
            _FINISH,
        ]
    }


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"parts": [{"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": arguments}, _CALLS]}


def _book(last: str) -> ScriptBook:
    return ScriptBook.from_book(
        {
            "scripts": [
                {
                    "name": "report",
                    "match": ["report"],
                    "steps": [
                        _call("call-gather", "gather", '{"topic": "q3"}'),
                        _call("call-send", "send_report", '{"to": "boss"}'),
                        _text(last),
                    ],
                },
                {"name": "ask", "match": ["ask me"], "steps": [_call("call-pick", "pick_colour", "{}"), _text(last)]},
            ],
            "fallback": {"steps": [_text("You said: {{last_user_text}}")]},
        },
        model_id="fork-book",
    )


_DENIED, _SENT = _book("Not sent."), _book("Sent.")


class CountingBook:
    """The book, counting calls; the answer after a tool result follows that result."""

    provider = _SENT.provider
    model_id = _SENT.model_id
    capabilities = _SENT.capabilities

    async def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        prompt = json.dumps([m.to_wire() for m in options.prompt])
        CALLS.append(str(sum(1 for m in options.prompt if m.role == "assistant")))
        book = _DENIED if "execution-denied" in prompt else _SENT
        if '"colour"' in prompt:
            picked = prompt.split('"colour": "')[-1].split('"')[0] if '"colour": "' in prompt else "?"
            book = _book(f"You picked {picked}.")
        async for part in book.stream(options):
            yield part


@tool
def gather(topic: str) -> str:
    """Gather the figures (a side effect: counted)."""
    RUNS["gather"] += 1
    return f"figures for {topic}"


@tool(approval="user-approval")
def send_report(to: str) -> str:
    """Send the report (needs approval; a side effect: counted)."""
    RUNS["send_report"] += 1
    return f"sent to {to}"


PICK = Tool(
    name="pick_colour",
    description="Ask the person to pick a colour (answered in the UI).",
    input_schema={"type": "object", "properties": {}},
)

AGENT = Agent(name="fork", model=CountingBook(), tools=[gather, send_report, PICK])
