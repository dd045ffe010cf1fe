"""Concurrent runs of one user racing one daily budget, through the durable path.

GIVEN one user's daily token budget and twelve runs started at once (each on its own thread, as
concurrent Lambdas are), each wanting two model calls, WHEN they race, THEN the user's spending
never passes the budget (each call reserved its worst case before it was made, and a model that
reports usage like a real tokenizer never uses more), every call the model received is counted,
and the runs the budget could not serve pause on a budget request saying so.
"""

from __future__ import annotations

import threading
from typing import Any

from pydantic import JsonValue

from stepline import Agent, tool
from stepline.llm.base import ToolDefinition
from stepline.protocol._json import dumps
from stepline.protocol.model_messages import ModelMessage
from stepline.store.memory import MemoryStore
from stepline.store.usage_counters import period_keys
from stepline.testing import FunctionModel, Harness, TurnResult, call, step, text

NOW = 1_764_633_600_000
LIMIT = 4000


@tool
def lookup(order: str) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order}


def _answer(prompt: list[ModelMessage], tools: list[ToolDefinition]) -> Any:
    """Calls the tool, then answers; its input tokens are about a quarter of the prompt's bytes."""
    input_tokens = len(dumps([m.to_wire() for m in prompt]).encode()) // 4
    usage: dict[str, JsonValue] = {"inputTokens": {"total": input_tokens}, "outputTokens": {"total": 150}}
    answered = any(m.role == "tool" for m in prompt)
    return step(text("done") if answered else call("lookup", order="A1"), usage=usage)


def test_racing_runs_never_spend_past_the_daily_budget() -> None:
    store = MemoryStore()
    model = FunctionModel(_answer)
    agent = Agent(name="desk", model=model, tools=[lookup], max_output_tokens=200, limits={"user_day_tokens": LIMIT})
    harness = Harness(agent, store=store, clock=lambda: NOW)
    results: list[TurnResult] = []
    start = threading.Barrier(12)

    def run() -> None:
        start.wait()
        results.append(harness.turn("where is A1?"))

    threads = [threading.Thread(target=run) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    day, _ = period_keys("user", "test-user", NOW)
    spent = store.counters.read(day)
    assert spent.tokens <= LIMIT
    assert spent.calls == len(model.calls)  # every call that reached the model was counted
    assert spent.committed_tokens == spent.tokens  # and no reservation was left behind
    completed = [r for r in results if r.run.status == "completed"]
    paused = [r for r in results if r.run.status == "waiting_approval"]  # held back on a budget request
    statuses = sorted(r.run.status for r in results)
    assert len(completed) + len(paused) == 12 and completed and paused, statuses
    for result in paused:
        [request] = result.pending_approvals
        assert request.budget_limit == "user_day_tokens" and request.tool_name == "budget"
        assert "more than your daily budget" in str(request.reason)
