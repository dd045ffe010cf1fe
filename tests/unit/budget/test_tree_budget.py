"""A run's budget covers its sub-agents' spending: the run tree's counter (`stepline.runtime.run_tree`).

GIVEN a lead with `run_tokens` delegating to a researcher that would spend past it, WHEN the
researcher's next call would take the tree (the lead's calls and the researcher's) past the
lead's limit, THEN that call is not made: the researcher pauses on a budget request, raised into
the conversation's message as its budget card, and the lead waits. Approved, the researcher goes on
under the raised limit and the lead takes the raise too (one decision, no second stop); denied, the
researcher ends with the budget sentence and the lead's model reads it as the tool's error. Two
researchers racing one tree's budget never pass it; the user's day counter counts every run's
calls.
"""

from __future__ import annotations

import threading
from typing import Any

from pydantic import JsonValue

from stepline import Agent, tool
from stepline.llm.base import ToolDefinition
from stepline.llm.scripted import ScriptedModel
from stepline.loop.budget import BudgetStop, CallEstimate
from stepline.loop.limits import Limits
from stepline.loop.state import UsageTotals
from stepline.protocol._json import dumps
from stepline.protocol.model_messages import ModelMessage
from stepline.runtime.budget_gate import CounterGate
from stepline.runtime.child_results import child_run_id
from stepline.runtime.run_tree import RunTree
from stepline.store.memory import MemoryStore
from stepline.store.usage_counters import CounterKey, MemoryCounters, period_keys
from stepline.testing import FunctionModel, Harness, call, scripted_model, step, text
from stepline.testing.result import TurnResult

NOW = 1_764_633_600_000  # 2025-12-02T00:00Z
LIMIT = 6200


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"{topic}: noted"


def _used(input_tokens: int, output_tokens: int = 100) -> dict[str, JsonValue]:
    return {"inputTokens": {"total": input_tokens}, "outputTokens": {"total": output_tokens}}


def _researcher(model: Any) -> Agent:
    return Agent(name="researcher", model=model, tools=[lookup], max_output_tokens=200)


def _lead(researcher: Agent, model: ScriptedModel, **limits: Any) -> Agent:
    return Agent(name="lead", model=model, tools=[researcher.as_tool()], max_output_tokens=200, limits=limits)


def _runaway() -> ScriptedModel:
    """Three lookups of 2,100 tokens each, then its answer: its third call's worst case (2,200) passes 6,200."""
    calls = [step(call("lookup", topic=f"t{n}"), usage=_used(2000)) for n in range(3)]
    return scripted_model([*calls, step(text("found it"), usage=_used(2000))])


def _tree(user: str, result: TurnResult) -> CounterKey:
    return CounterKey("user", user, f"run:2025-12-02:{result.run.run_id}")


def _child(result: TurnResult) -> str:
    return child_run_id(result.run.run_id, result.tool_calls[0].tool_call_id)


def _cards(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in message["parts"] if p.get("type") == "data-budget"]


def test_the_child_pauses_at_the_tree_limit_and_one_approval_lets_child_and_lead_finish() -> None:
    child_model = _runaway()
    lead_model = scripted_model(
        [step(call("researcher", task="dig"), usage=_used(10, 10)), step(text("done: found it"), usage=_used(10, 10))]
    )
    harness = Harness(_lead(_researcher(child_model), lead_model, run_tokens=LIMIT), clock=lambda: NOW)
    paused = harness.turn("research this")

    assert paused.run.status == "waiting_user" and len(lead_model.calls) == 1  # the lead waits for its child
    child = harness.run(_child(paused))
    assert child.status == "waiting_approval" and len(child_model.calls) == 2  # the third call was not made
    assert child.context is not None and child.context["parent"]["tree"] == {  # type: ignore[index]
        "rootRunId": paused.run.run_id,
        "day": "2025-12-02",
        "runTokens": LIMIT,
        "runUsd": None,
    }
    [request] = harness.pending_approvals(child.run_id)
    assert request.budget_limit == "run_tokens"
    assert "more than this run's limit, which its sub-agents share" in str(request.reason)
    tree = harness.store.counters.read(_tree(harness.user_id, paused))
    assert tree.tokens == 20 + 2 * 2100 and tree.calls == 3 and tree.committed_tokens == tree.tokens
    assert request.input["spent"] == tree.tokens and request.input["value"] == LIMIT  # type: ignore[index]
    # The person sees the child's request in the conversation's message, as a budget card.
    [card] = _cards(paused.message)  # the log the conversation's stream reads
    assert card["id"] == request.approval_id and card["data"]["state"] == "requested"
    assert card["data"]["raiseTo"] == 2 * LIMIT and card["data"]["subAgent"]["agent"] == "researcher"

    done = harness.resume(paused.run.run_id, approve=True)
    assert done.status == "completed" and done.text == "done: found it"
    assert done.stored_message["id"] == paused.stored_message["id"]  # the lead's one message throughout
    assert harness.run(child.run_id).status == "completed" and len(child_model.calls) == 4
    assert done.tool("researcher").output == "found it"
    assert len(lead_model.calls) == 2  # the lead took the raise: no second request for the same answer
    for message in (done.message, done.stored_message):  # the card, replaced by its decision
        assert [c["data"]["state"] for c in _cards(message)] == ["approved"]
    tree = harness.store.counters.read(_tree(harness.user_id, paused))
    assert tree.calls == 6 and tree.tokens == 20 + 4 * 2100 + 20
    day, _ = period_keys("user", harness.user_id, NOW)  # the user's day counts every run of the tree
    assert harness.store.counters.read(day).tokens == tree.tokens


def test_denied_the_child_ends_with_the_budget_sentence_and_the_lead_reads_it_as_a_tool_error() -> None:
    child_model = _runaway()
    lead_model = scripted_model([step(call("researcher", task="dig"), usage=_used(10, 10)), text("it could not")])
    harness = Harness(_lead(_researcher(child_model), lead_model, run_tokens=LIMIT), clock=lambda: NOW)
    paused = harness.turn("research this")
    done = harness.resume(paused.run.run_id, approve=(False, "enough"))

    child = harness.run(_child(paused))
    assert child.status == "failed" and len(child_model.calls) == 2
    assert "the budget request was denied (enough)" in str((child.error or {}).get("message"))
    assert done.status == "completed" and done.text == "it could not"
    assert done.tool("researcher").status == "error"
    assert "the researcher agent failed: this answer needs about" in str(done.tool("researcher").error)
    assert "the budget request was denied" in str(lead_model.calls[1].prompt)  # the lead's model read it
    [card] = _cards(done.stored_message)
    assert card["data"]["state"] == "denied" and card["data"]["reason"] == "enough"


def test_without_a_run_limit_the_tree_is_not_counted_and_the_users_day_counts_the_children() -> None:
    store = MemoryStore()
    lead_model = scripted_model(
        [step(call("researcher", task="dig"), usage=_used(10, 10)), step(text("done"), usage=_used(10, 10))]
    )
    harness = Harness(_lead(_researcher(_runaway()), lead_model), store=store, clock=lambda: NOW)
    result = harness.turn("research this")
    assert result.status == "completed"
    child = harness.run(_child(result))
    assert child.context is not None and "tree" not in child.context["parent"]  # type: ignore[operator]
    assert store.counters.read(_tree(harness.user_id, result)).calls == 0
    day, month = period_keys("user", harness.user_id, NOW)
    assert store.counters.read(day).tokens == 40 + 4 * 2100 and store.counters.read(day).calls == 6
    assert store.counters.read(month).tokens == 40 + 4 * 2100


def test_a_grandchild_inherits_its_parents_tree() -> None:
    leaf = Agent(name="leaf", model=scripted_model([step(text("leaf"), usage=_used(5, 5))]))
    mid_model = scripted_model([step(call("leaf", task="x"), usage=_used(5, 5)), step(text("mid"), usage=_used(5, 5))])
    mid = Agent(name="mid", model=mid_model, tools=[leaf.as_tool()], limits={"run_tokens": 80_000})  # not the tree's
    lead_model = scripted_model([step(call("mid", task="y"), usage=_used(5, 5)), step(text("top"), usage=_used(5, 5))])
    lead = Agent(name="lead", model=lead_model, tools=[mid.as_tool()], limits={"run_tokens": 90_000})
    harness = Harness(lead, clock=lambda: NOW)
    result = harness.turn("go")
    assert result.status == "completed" and result.text == "top"
    mid_run = harness.run(_child(result))
    leaf_call = harness.store.list_tool_calls(harness.user_id, mid_run.run_id)[0]
    leaf_run = harness.run(child_run_id(mid_run.run_id, leaf_call.tool_call_id))
    link = {"rootRunId": result.run.run_id, "day": "2025-12-02", "runTokens": 90_000, "runUsd": None}
    assert mid_run.context is not None and leaf_run.context is not None
    assert mid_run.context["parent"]["tree"] == link  # type: ignore[index]
    assert leaf_run.context["parent"]["tree"] == link  # type: ignore[index]
    tree = harness.store.counters.read(_tree(harness.user_id, result))
    assert tree.calls == 5 and tree.tokens == 50 and tree.committed_tokens == 50


# -- two children racing one tree's budget -------------------------------------------------------------

RACE_LIMIT = 12_000


def _honest(prompt: list[ModelMessage], tools: list[ToolDefinition]) -> Any:
    """Looks up until told to stop; its input tokens are a quarter of the prompt's bytes (as a tokenizer's)."""
    input_tokens = len(dumps([m.to_wire() for m in prompt]).encode()) // 4
    usage: dict[str, JsonValue] = {"inputTokens": {"total": input_tokens}, "outputTokens": {"total": 150}}
    return step(call("lookup", topic="more"), usage=usage)


class _ParallelHarness(Harness):
    """Drives the children a step started each on its own thread, at once (as their Lambdas run)."""

    def _drive_children(self, approve: Any, answer: Any) -> None:
        started = self.orchestrator.started[self._seen_starts :]
        self._seen_starts = len(self.orchestrator.started)
        waiting = {c for c in started if self.run(c).status in ("waiting_approval", "waiting_user")}
        threads = [
            threading.Thread(target=self._drive, args=(c, [], approve, answer), kwargs={"waiting": c in waiting})
            for c in started
            if self.run(c).status not in ("completed", "failed", "aborted")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def test_two_children_racing_one_tree_budget_never_pass_it() -> None:
    model = FunctionModel(_honest)
    researcher = Agent(name="researcher", model=model, tools=[lookup], max_output_tokens=200)
    lead_model = scripted_model([step(call("researcher", task="a"), call("researcher", task="b"), usage=_used(10, 10))])
    lead = Agent(name="lead", model=lead_model, tools=[researcher.as_tool()], limits={"run_tokens": RACE_LIMIT})
    harness = _ParallelHarness(lead, clock=lambda: NOW)
    result = harness.turn("research both")

    assert result.status == "waiting_user"
    children = [harness.run(child_run_id(result.run.run_id, c.tool_call_id)) for c in result.tool_calls]
    assert [c.status for c in children] == ["waiting_approval", "waiting_approval"]  # each stopped by the tree
    tree = harness.store.counters.read(_tree(harness.user_id, result))
    assert tree.tokens <= RACE_LIMIT  # no call used more than its worst case: the tree never passed its limit
    assert tree.calls == len(model.calls) + 1  # every call that reached a model was counted (and the lead's)
    assert tree.committed_tokens == tree.tokens  # no reservation was left behind
    for child in children:
        [request] = harness.pending_approvals(child.run_id)
        assert request.budget_limit == "run_tokens"
        # what each was refused on is what the tree had spent, its call's worst case on top passing the limit
        assert request.input["spent"] + request.input["needed"] > RACE_LIMIT  # type: ignore[index, operator]


# -- the gate's tree ceiling -----------------------------------------------------------------------------


def _gate(tree: RunTree) -> CounterGate:
    return CounterGate(MemoryCounters(), "ann", "acme", "researcher", lambda: NOW, tree)


def test_a_childs_tree_ceiling_in_usd_and_the_raises_it_honours() -> None:
    gate = _gate(RunTree(root_run_id="run-1", day="2025-12-02", root=False, tokens=10_000, usd=0.5))
    call_worst = CallEstimate(input_tokens=1000, output_tokens=200, usd=0.3)
    held = gate.reserve(call_worst, Limits())
    assert not isinstance(held, BudgetStop)
    held.settle(UsageTotals(input_tokens=900, output_tokens=100, cost_usd=0.25))
    stop = gate.reserve(call_worst, Limits())  # 0.25 spent + 0.30 worst case passes the tree's $0.50
    assert isinstance(stop, BudgetStop) and (stop.limit, stop.value, stop.spent, stop.tree) == (
        "run_usd",
        0.5,
        0.25,
        True,
    )
    assert "more than this run's limit, which its sub-agents share" in stop.message()
    # A raise a person made on this run lifts its ceiling; one below the inherited ceiling does not lower it.
    assert not isinstance(gate.reserve(call_worst, Limits(), {"run_usd": 1.0}), BudgetStop)
    lowered = gate.reserve(CallEstimate(100, 100, 0.01), Limits(), {"run_usd": 1.0, "run_tokens": 50})
    assert not isinstance(lowered, BudgetStop)
    tree = gate.counters.read(RunTree("run-1", "2025-12-02", root=False).key("ann"))
    assert tree.calls == 1 and tree.committed_tokens == 1000 + 1200 + 200  # what was spent and what is held
    unpriced = gate.reserve(CallEstimate(100, 100, None), Limits())  # a USD ceiling over a model without a price
    assert isinstance(unpriced, BudgetStop) and unpriced.limit == "run_usd"


def test_a_roots_ceilings_are_its_own_limits_with_its_raises() -> None:
    gate = _gate(RunTree(root_run_id="run-1", day="2025-12-02", root=True))
    worst = CallEstimate(input_tokens=800, output_tokens=200, usd=None)
    assert isinstance(gate.reserve(worst, Limits(run_tokens=900)), BudgetStop)
    assert not isinstance(gate.reserve(worst, Limits(run_tokens=1800)), BudgetStop)  # raised: in `limits`
    assert not isinstance(gate.reserve(worst, Limits()), BudgetStop)  # no run limit: no tree counted
    assert gate.counters.read(gate.tree.key("ann")).committed_tokens == 1000  # type: ignore[union-attr]
