"""Limits per run, per user and per tenant, checked before every model call on the durable path.

GIVEN an agent with a limit, WHEN its run reaches it, THEN the call that would pass it is never
made (the scripted model records every call it receives: none beyond the limit), the run ends
with a message naming the limit, and the work already done (text, tool results) is kept. Each limit
kind stops at the call the documented rule names: a call goes ahead only when what is spent plus
its worst case (input estimate + `max_output_tokens`) is within the limit.
"""

from __future__ import annotations

from typing import Any

import pytest

from stepline import Agent, tool
from stepline.agent.definition import AgentDefinitionError
from stepline.agent.loading import AgentSet
from stepline.llm.scripted import ScriptedModel
from stepline.local.dev import DevConfig, DevConfigError
from stepline.loop.limits import LIMIT_NAMES, Limits
from stepline.loop.prices import PriceTable
from stepline.runtime.budget_gate import CounterGate
from stepline.runtime.services import Services
from stepline.store.memory import MemoryStore
from stepline.store.usage_counters import MemoryCounters, period_keys
from stepline.testing import Harness, TurnResult, call, scripted_model, step, text

NOW = 1_764_633_600_000  # 2025-12-02T00:00:00Z
PRICES = PriceTable.parse({"scripted:priced": {"input": 1.0, "output": 1.0}}, source="test")  # $1 per 1M tokens


@tool
def lookup(order: str) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order, "status": "shipped"}


def _usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {"inputTokens": {"total": input_tokens}, "outputTokens": {"total": output_tokens}}


def _looping_model(steps: int = 6, *, model_id: str = "priced") -> ScriptedModel:
    """A model that calls a tool every step (1,000 input and 100 output tokens each), then answers."""
    script = [step(text(f"step {n}"), call("lookup", order=f"A{n}"), usage=_usage(1000, 100)) for n in range(steps)]
    return scripted_model([*script, step(text("done"), usage=_usage(1000, 100))], model_id=model_id)


class BudgetHarness(Harness):
    """The harness with the deployment's prices and, like a deployment, its limits and tenant claim."""

    deployment_limits: Limits | None = None
    tenant_claim: str | None = None

    def services(self) -> Any:
        services = super().services()
        services.prices = PRICES
        services.limits = self.deployment_limits
        services.tenant_claim = self.tenant_claim
        return services


def _agent(model: ScriptedModel, **limits: Any) -> Agent:
    return Agent(name="desk", model=model, tools=[lookup], max_output_tokens=200, limits=limits or None)


def _run(agent: object, harness: BudgetHarness | None = None) -> TurnResult:
    assert isinstance(agent, Agent)
    harness = harness or BudgetHarness(agent, clock=lambda: NOW)
    return harness.turn("track my orders")


def _ended_by_budget(agent: Agent, *, calls: int, model: ScriptedModel, words: str) -> None:
    """Held back at the limit on a budget request; denied, the run ends with its sentence."""
    harness = BudgetHarness(agent, clock=lambda: NOW)
    result = _run(agent, harness)
    assert len(model.calls) == calls, "a call beyond the limit reached the model"
    assert result.run.status == "waiting_approval"
    [request] = result.pending_approvals
    assert request.tool_name == "budget" and words in str(request.reason)
    [card] = [p for p in result.stored_message["parts"] if p.get("type") == "data-budget"]
    assert card["id"] == request.approval_id and card["data"]["state"] == "requested"
    assert words in card["data"]["message"]
    ended = harness.resume(result.run_id, approve=(False, "not today"))
    assert len(model.calls) == calls, "a denied budget request made the call anyway"
    assert ended.run.status == "failed"
    error = ended.run.error or {}
    assert error.get("code") == "budget_exceeded"
    assert words in str(error.get("message")) and "denied (not today)" in str(error.get("message"))
    kept = [p for p in ended.stored_message["parts"] if p.get("type") == "text"]
    assert [p["text"] for p in kept] == [f"step {n}" for n in range(calls)]  # the completed work stays
    outputs = [p for p in ended.stored_message["parts"] if p.get("state") == "output-available"]
    assert len(outputs) == calls
    [card] = [p for p in ended.stored_message["parts"] if p.get("type") == "data-budget"]
    assert card["data"]["state"] == "denied"


def _request(result: TurnResult) -> str:
    """The sentence of the budget request a run waits on."""
    [request] = result.pending_approvals
    assert request.tool_name == "budget"
    return str(request.reason)


def test_run_steps_stops_before_the_step_past_it() -> None:
    model = _looping_model()
    _ended_by_budget(_agent(model, run_steps=3), calls=3, model=model, words="3 steps this run's limit allows")


def test_run_tool_calls_stops_before_a_call_once_they_are_used() -> None:
    model = _looping_model()
    _ended_by_budget(_agent(model, run_tool_calls=2), calls=2, model=model, words="2 tool calls")


def test_run_tokens_stops_the_call_whose_worst_case_would_pass() -> None:
    # Each call uses 1,100 tokens; its worst case >= 1,000 (the previous input, over the prompt's bytes) + 200.
    # After 3 calls 3,300 are spent: a 4th needs >= 1,200 more, over 4,400; after 2 (2,200) it fits.
    model = _looping_model()
    _ended_by_budget(_agent(model, run_tokens=4400), calls=3, model=model, words="more than this run's limit")


def test_run_usd_stops_the_call_whose_worst_case_would_pass() -> None:
    # $1 per million tokens: each call $0.0011, the worst case of the next >= $0.0012.
    model = _looping_model()
    _ended_by_budget(_agent(model, run_usd=0.0044), calls=3, model=model, words="more than this run's limit")


def test_a_usd_limit_over_an_unpriced_model_refuses_the_call() -> None:
    model = _looping_model(model_id="unpriced")
    result = _run(_agent(model, run_usd=1.0))
    assert len(model.calls) == 0
    assert "scripted:unpriced has no price" in str((result.run.error or {}).get("message"))


def test_a_run_within_its_limits_completes() -> None:
    model = _looping_model(2)
    result = _run(_agent(model, run_steps=3, run_tool_calls=3, run_tokens=10_000, run_usd=1.0))
    assert result.run.status == "completed" and len(model.calls) == 3


def test_a_user_day_budget_spans_runs_and_stops_the_next_call() -> None:
    store = MemoryStore()
    first = _looping_model(1)
    harness = BudgetHarness(_agent(first, user_day_tokens=2400), store=store, clock=lambda: NOW)
    # 2 calls, 2,200 tokens: the 2nd call's worst case (1,000 + 200) fit; a new run's first does not
    # (its input bound, the prompt's bytes, is over the 200 tokens left)
    assert _run(harness.agent, harness).run.status == "completed"
    second = _looping_model(1)
    harness = BudgetHarness(_agent(second, user_day_tokens=2400), store=store, clock=lambda: NOW)
    result = _run(harness.agent, harness)
    assert len(second.calls) == 0 and result.run.status == "waiting_approval"
    assert "more than your daily budget" in _request(result)
    day, month = period_keys("user", "test-user", NOW)
    assert store.counters.read(day).tokens == 2200 == store.counters.read(month).tokens
    assert store.counters.read(day).committed_tokens == 2200  # the refused call reserved nothing
    # The next day the budget is fresh.
    third = _looping_model(1)
    harness = BudgetHarness(_agent(third, user_day_tokens=2400), store=store, clock=lambda: NOW + 86_400_000)
    assert _run(harness.agent, harness).run.status == "completed"


def test_the_tenant_comes_from_the_configured_claim() -> None:
    store = MemoryStore()

    def run_as(user: str, org: str, model: ScriptedModel) -> TurnResult:
        harness = BudgetHarness(
            _agent(model), store=store, user_id=user, claims={"org": org, "sub": user}, clock=lambda: NOW
        )
        harness.deployment_limits = Limits(tenant_day_usd=0.0024)
        harness.tenant_claim = "org"
        return _run(harness.agent, harness)

    assert run_as("ann", "acme", _looping_model(1)).run.status == "completed"  # $0.0022 of acme's $0.0024
    blocked = _looping_model(1)
    result = run_as("bob", "acme", blocked)  # another user of the same tenant: the tenant's budget is spent
    assert len(blocked.calls) == 0 and "your team's daily budget" in _request(result)
    assert run_as("cy", "globex", _looping_model(1)).run.status == "completed"  # another tenant is untouched
    tenant_day, _ = period_keys("tenant", "acme", NOW)
    assert store.counters.read(tenant_day).tokens == 2200
    assert store.counters.read(period_keys("tenant", "globex", NOW)[0]).tokens == 2200


def test_a_tenant_is_counted_only_in_a_deployment_with_a_tenant_limit() -> None:
    # Nothing reads a tenant's counters but its limits. Without one they would be one item that
    # every call of the deployment's default tenant writes: a hot key, and four writes a call.
    store = MemoryStore()
    user_day, _ = period_keys("user", "test-user", NOW)
    tenant_day, tenant_month = period_keys("tenant", "default", NOW)
    plain = BudgetHarness(_agent(_looping_model(1)), store=store, clock=lambda: NOW)
    _run(plain.agent, plain)
    assert store.counters.read(user_day).tokens == 2200
    assert store.counters.read(tenant_day).calls == 0 == store.counters.read(tenant_month).calls
    assert store.counters.agents(tenant_day) == {}
    # A tenant limit in the deployment: every call counts on its tenant's counters again.
    limited = BudgetHarness(_agent(_looping_model(1)), store=store, clock=lambda: NOW)
    limited.deployment_limits = Limits(tenant_month_tokens=10**9)
    _run(limited.agent, limited)
    assert store.counters.read(user_day).tokens == 4400
    assert store.counters.read(tenant_day).tokens == 2200 == store.counters.read(tenant_month).tokens


def test_any_agents_tenant_limit_makes_every_call_count_on_the_tenant() -> None:
    # A tenant limit of one agent is over the whole tenant's spending, the other agents' calls too.
    model = _looping_model(0)
    helper = Agent(name="helper", model=model, limits={"tenant_day_tokens": 10**9})
    lead = Agent(name="lead", model=model, tools=[helper.as_tool(description="Helps.")])
    with_limit = Services(store=MemoryStore(), agents=AgentSet.single(lead))
    assert with_limit.counts_tenants()  # a sub-agent's limit counts
    assert not Services(store=MemoryStore(), agents=AgentSet.single(Agent(name="solo", model=model))).counts_tenants()
    assert Services(store=MemoryStore(), model=model, limits=Limits(tenant_day_usd=1.0)).counts_tenants()
    # A call under a tenant limit of its own reserves on the tenant even where the gate counts none.
    gate = CounterGate(MemoryCounters(), "ann", "acme", "solo", lambda: NOW, count_tenant=False)
    assert gate.keys(Limits(user_day_tokens=5)) == list(period_keys("user", "ann", NOW))
    assert gate.keys(Limits(tenant_day_tokens=5)) == [
        *period_keys("user", "ann", NOW),
        *period_keys("tenant", "acme", NOW),
    ]


def test_usage_is_counted_per_agent_without_any_limit() -> None:
    store = MemoryStore()
    harness = BudgetHarness(_agent(_looping_model(1)), store=store, clock=lambda: NOW)
    _run(harness.agent, harness)
    day, _ = period_keys("user", "test-user", NOW)
    value = store.counters.read(day)
    assert (value.tokens, value.calls, value.nano_usd) == (2200, 2, 2200 * 1000)
    assert store.counters.agents(day)["desk"].tokens == 2200


@pytest.mark.parametrize(
    ("limits", "named"),
    [
        ({"run_usd": -1}, "limits: run_usd"),
        ({"run_usd": float("nan")}, "limits: run_usd"),
        ({"user_day_tokens": "lots"}, "limits: user_day_tokens"),
        ({"user_day_tokens": 10.5}, "limits: user_day_tokens"),
        ({"tenant_month_usd": True}, "limits: tenant_month_usd"),
        ({"run_tool_calls": -1}, "limits: run_tool_calls"),
        ({"run_tokenz": 10}, "limits: run_tokenz: not a limit"),
    ],
)
def test_a_bad_limit_is_a_definition_error_naming_the_setting(limits: dict[str, Any], named: str) -> None:
    with pytest.raises(AgentDefinitionError, match=named):
        Agent(name="desk", limits=limits)


def test_the_deployment_limits_are_read_and_checked_at_start() -> None:
    env = {"STEPLINE_LIMITS": '{"userDayUsd": 5, "run_steps": 10}', "STEPLINE_TENANT_CLAIM": "org"}
    config = DevConfig.from_env(env)
    assert config.budget.limits == Limits(user_day_usd=5, run_steps=10)
    assert config.budget.tenant_claim == "org"
    with pytest.raises(DevConfigError, match=r"STEPLINE_LIMITS: user_day_usd: Input should be greater than 0"):
        DevConfig.from_env({"STEPLINE_LIMITS": '{"user_day_usd": -5}'})
    with pytest.raises(DevConfigError, match="STEPLINE_LIMITS: not JSON"):
        DevConfig.from_env({"STEPLINE_LIMITS": "{user_day_usd: 5"})
    with pytest.raises(DevConfigError, match="STEPLINE_LIMITS: not JSON"):
        DevConfig.from_env({"STEPLINE_LIMITS": '{"user_day_usd": NaN}'})


def test_an_agents_limits_take_precedence_setting_by_setting() -> None:
    deployment = Limits(run_steps=10, user_day_usd=5)
    agent = Limits.parse({"run_steps": 3}, source="limits")
    assert agent.over(deployment) == Limits(run_steps=3, user_day_usd=5)
    assert set(LIMIT_NAMES) <= set(Limits.model_fields)
