"""At a limit the run pauses on a budget request; a person raises the limit for the run, or ends it.

GIVEN an agent whose run reaches a limit, WHEN the run pauses on its budget request, THEN the
call is not made until someone decides; approved (by the run's user for a run limit, by an admin
for a user or tenant limit), the run continues the same assistant message with the limit raised
for this run only; a decision by someone not allowed to raise the limit is refused
(`BudgetDecisionForbidden`, the API's 403) and decides nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from stepline import Agent, tool
from stepline.llm.scripted import ScriptedModel
from stepline.runtime import waits
from stepline.runtime.budget_wait import BudgetDecisionForbidden, is_admin
from stepline.store.memory import MemoryStore
from stepline.testing import Harness, call, scripted_model, step, text

NOW = 1_764_633_600_000


@tool
def lookup(order: str) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order, "status": "shipped"}


def _usage() -> dict[str, Any]:
    return {"inputTokens": {"total": 1000}, "outputTokens": {"total": 100}}


def _model(steps: int) -> ScriptedModel:
    script = [step(text(f"step {n}"), call("lookup", order=f"A{n}"), usage=_usage()) for n in range(steps)]
    return scripted_model([*script, step(text("done"), usage=_usage())])


def _agent(model: ScriptedModel, **limits: Any) -> Agent:
    return Agent(name="desk", model=model, tools=[lookup], max_output_tokens=200, limits=limits)


def _budget_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in message["parts"] if p.get("type") == "data-budget"]


def test_approved_the_run_continues_the_same_message_with_the_limit_raised() -> None:
    model = _model(4)  # 5 calls in all
    harness = Harness(_agent(model, run_steps=2), clock=lambda: NOW)
    paused = harness.turn("track my orders")
    assert paused.run.status == "waiting_approval" and len(model.calls) == 2
    [request] = paused.pending_approvals
    assert request.budget_limit == "run_steps"
    [card] = _budget_parts(paused.stored_message)
    assert card["data"]["message"] == "this answer has used the 2 steps this run's limit allows"
    assert card["data"]["raiseTo"] == 4 and card["data"]["state"] == "requested"

    # Raised to 4 steps: paused again before the 5th call, approved again (raised to 8): it finishes.
    done = harness.resume(paused.run_id, approve=True)
    assert done.run.status == "completed" and len(model.calls) == 5
    assert done.invocations.count("AwaitInput") == 2
    assert done.stored_message["id"] == paused.stored_message["id"]  # one assistant message throughout
    texts = [p["text"] for p in done.stored_message["parts"] if p.get("type") == "text"]
    assert texts == ["step 0", "step 1", "step 2", "step 3", "done"]
    states = [p["data"]["state"] for p in _budget_parts(done.stored_message)]
    assert states == ["approved", "approved"]  # each request's card, replaced by its decision
    assert [(e.input, e.status) for e in done.tool_calls] == [({"order": f"A{n}"}, "success") for n in range(4)]


def test_a_user_budget_needs_an_admin_and_a_refusal_decides_nothing() -> None:
    store = MemoryStore()
    first = _model(1)
    Harness(_agent(first), store=store, clock=lambda: NOW).turn("hello")  # 2,200 tokens spent today
    model = _model(1)
    harness = Harness(_agent(model, user_day_tokens=2400), store=store, clock=lambda: NOW)
    paused = harness.turn("track my orders")
    assert paused.run.status == "waiting_approval" and model.calls == []
    [request] = paused.pending_approvals
    assert request.budget_limit == "user_day_tokens" and "more than your daily budget" in str(request.reason)

    with pytest.raises(BudgetDecisionForbidden, match="user_day_tokens limit needs an admin"):
        waits.decide(harness.services(), harness.user_id, request.approval_id, approved=True, reason=None)
    assert store.get_approval(harness.user_id, request.approval_id).status == "requested"  # nothing decided
    assert harness.run(paused.run_id).status == "waiting_approval"

    harness.admin = True
    done = harness.resume(paused.run_id, approve=True)
    assert done.run.status == "completed" and len(model.calls) == 2
    assert store.get_approval(harness.user_id, request.approval_id).decision == "approved"


def test_the_raise_is_for_this_run_only() -> None:
    store = MemoryStore()
    Harness(_agent(_model(1)), store=store, clock=lambda: NOW).turn("hello")
    harness = Harness(_agent(_model(1), user_day_tokens=2400), store=store, clock=lambda: NOW, admin=True)
    assert harness.turn("first", approve=True).run.status == "completed"  # approved: this run goes past 2,400
    other = _model(1)
    again = Harness(_agent(other, user_day_tokens=2400), store=store, clock=lambda: NOW).turn("second")
    assert again.run.status == "waiting_approval" and other.calls == []  # the next run meets the limit again


def test_a_run_limit_is_raised_by_the_runs_own_user() -> None:
    model = _model(1)
    harness = Harness(_agent(model, run_tool_calls=1), clock=lambda: NOW)
    paused = harness.turn("track my orders")
    [request] = paused.pending_approvals
    waits.decide(harness.services(), harness.user_id, request.approval_id, approved=True, reason=None)
    assert harness.resume(paused.run_id).run.status == "completed"


@pytest.mark.parametrize(
    ("claims", "setting", "admin"),
    [
        ({"admin": True}, "admin", True),
        ({"admin": "true"}, "admin", True),
        ({"admin": False}, "admin", False),
        ({"cognito:groups": ["staff", "budget-admins"]}, "cognito:groups=budget-admins", True),
        ({"cognito:groups": "[staff, budget-admins]"}, "cognito:groups=budget-admins", True),
        ({"cognito:groups": "staff"}, "cognito:groups=budget-admins", False),
        ({"sub": "ops"}, "sub=ops", True),
        ({"sub": "ops"}, None, False),
        ({}, "admin", False),
    ],
)
def test_the_admin_claim(claims: dict[str, Any], setting: str | None, admin: bool) -> None:
    assert is_admin(claims, setting) is admin
