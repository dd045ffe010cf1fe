"""Two agents behind one deployment, for the API tests (`STEPLINE_AGENT=tests.support.team_agents:AGENTS`).

Each answers with its own name from a script book (stateless, as a server needs), so a test can
tell from the text which agent answered.
"""

from __future__ import annotations

from typing import Any

from stepline import Agent, tool
from stepline.llm.script_book import ScriptBook


def _book(name: str) -> ScriptBook:
    finish: dict[str, Any] = {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}}
    step = [
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": f"{name} here."},
        {"type": "text-end", "id": "t"},
        finish,
    ]
    return ScriptBook.from_book({"scripts": [], "fallback": {"steps": [step]}}, model_id=f"{name}-book")


@tool(approval="user-approval")
def refund(cents: int) -> int:
    """Refund an amount, in cents."""
    return cents


AGENTS = {
    "sales": Agent(name="sales", description="Answers questions about plans", model=_book("sales")),
    "billing": Agent(name="billing", description="Refunds and invoices", model=_book("billing"), tools=[refund]),
}
