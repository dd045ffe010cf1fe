"""Cost per step on the durable path: each step's row and the message's `metadata.usage` carry `costUsd`.

GIVEN an agent whose model the price table knows, WHEN a run of two steps completes through the
worker functions (a new process per call, over one store), THEN each step row has the cost of its
own tokens and the message metadata their sum; a model the table does not know leaves `costUsd`
absent (never 0); an agent's own prices replace the deployment's; a deployment price file that
is missing or malformed stops `stepline dev` and a Lambda at start-up, naming the variable.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from stepline import Agent, tool
from stepline.agent.definition import AgentDefinitionError
from stepline.agent.fingerprint import digest
from stepline.aws.wiring import ConfigurationError, Settings, build_services
from stepline.local.dev import DevConfig, DevConfigError
from stepline.loop.prices import PriceTable
from stepline.runtime.inspection import run_view
from stepline.testing import Harness, call, scripted_model, step, text

TABLE = PriceTable.parse({"scripted:priced": {"input": 2.0, "output": 10.0}}, source="test")


@tool
def lookup(order: str) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order, "status": "shipped"}


def _usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {"inputTokens": {"total": input_tokens}, "outputTokens": {"total": output_tokens}}


def _model(model_id: str) -> Any:
    return scripted_model(
        [
            step(call("lookup", order="A1"), usage=_usage(1000, 100)),
            step(text("It shipped."), usage=_usage(3000, 200)),
        ],
        model_id=model_id,
    )


class PricedHarness(Harness):
    """The harness with a deployment price table (what `STEPLINE_PRICES` gives a real one)."""

    prices: PriceTable = TABLE

    def services(self) -> Any:
        services = super().services()
        services.prices = self.prices
        return services


def _close(actual: list[float], expected: list[float]) -> bool:
    return len(actual) == len(expected) and all(math.isclose(a, e) for a, e in zip(actual, expected, strict=True))


def _run(agent: Agent) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    harness = PricedHarness(agent)
    result = harness.turn("where is A1?")
    assert result.run.status == "completed", result.run
    steps = harness.store.list_steps(harness.user_id, result.run.run_id)
    usages = [dict(s.usage or {}) for s in steps]
    view = run_view(harness.store, harness.user_id, result.run.run_id)  # what the run inspector shows
    assert [s["cost"] for s in view["steps"]] == [u.get("costUsd") for u in usages]
    return result.stored_message["metadata"], usages


def test_each_step_and_the_message_carry_their_cost() -> None:
    metadata, steps = _run(Agent(name="desk", model=_model("priced"), tools=[lookup]))
    first = (1000 * 2.0 + 100 * 10.0) / 1e6
    second = (3000 * 2.0 + 200 * 10.0) / 1e6
    assert _close([s["costUsd"] for s in steps], [first, second])
    assert metadata["usage"]["inputTokens"] == 4000 and metadata["usage"]["outputTokens"] == 300
    assert _close([metadata["usage"]["costUsd"]], [first + second])


def test_an_unpriced_model_leaves_cost_absent_not_zero() -> None:
    metadata, steps = _run(Agent(name="desk", model=_model("unpriced"), tools=[lookup]))
    assert metadata["usage"]["inputTokens"] == 4000
    assert "costUsd" not in metadata["usage"]
    assert all("costUsd" not in s for s in steps)


def test_an_agent_prices_its_own_model_over_the_deployment() -> None:
    own = {"scripted:priced": {"input": 1.0, "output": 1.0}, "scripted:unpriced": {"input": 1.0, "output": 1.0}}
    metadata, _ = _run(Agent(name="desk", model=_model("unpriced"), tools=[lookup], prices=own))
    assert _close([metadata["usage"]["costUsd"]], [4300 / 1e6])
    metadata, _ = _run(Agent(name="desk", model=_model("priced"), tools=[lookup], prices=own))
    assert _close([metadata["usage"]["costUsd"]], [4300 / 1e6])


def test_an_agent_with_a_bad_price_is_a_definition_error_naming_it() -> None:
    with pytest.raises(AgentDefinitionError, match=r"agent desk: prices: scripted:m: output: Input should be"):
        Agent(name="desk", prices={"scripted:m": {"input": 1, "output": "lots"}})
    with pytest.raises(AgentDefinitionError, match="unknown model provider 'opneai'"):
        Agent(name="desk", prices={"opneai:gpt-5": {"input": 1, "output": 2}})


def test_the_fingerprint_of_an_agent_without_prices_is_unchanged_by_the_setting() -> None:
    plain = Agent(name="desk")
    earlier = {key: getattr(plain, key) for key in Agent.model_fields if key not in ("prices", "limits")}
    assert plain.fingerprint() == digest(earlier, plain.tools, plain.model_spec("<runtime default>"))
    priced = Agent(name="desk", prices={"scripted:m": {"input": 1, "output": 2}})
    assert plain.fingerprint() != priced.fingerprint()


def test_dev_reads_the_deployment_price_file(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"openai:my-tune": {"input": 1, "cachedInput": 0.5, "output": 2}}), encoding="utf-8")
    config = DevConfig.from_env({"STEPLINE_PRICES": str(path)})
    assert config.budget.prices.price_of("openai", "my-tune") is not None
    assert config.budget.prices.price_of("openai", "gpt-5.1") is not None  # the shipped entries stay


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (None, "cannot read the price table"),
        ('{"openai:m": {"input": -2, "output": 1}}', "openai:m: input"),
        ('{"nobody:m": {"input": 1, "output": 1}}', "unknown model provider 'nobody'"),
    ],
)
def test_a_bad_deployment_price_file_stops_the_start(tmp_path: Path, content: str | None, named: str) -> None:
    path = tmp_path / "prices.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(DevConfigError, match="STEPLINE_PRICES") as raised:
        DevConfig.from_env({"STEPLINE_PRICES": str(path)})
    assert named in str(raised.value)
    settings = Settings.from_env(
        {
            "STEPLINE_AGENT_TABLE": "agent",
            "STEPLINE_EVENTS_TABLE": "events",
            "STEPLINE_BUCKET": "bkt",
            "STEPLINE_PRICES": str(path),
        }
    )
    with pytest.raises(ConfigurationError, match="STEPLINE_PRICES") as raised:
        build_services(settings, client=lambda _: object())
    assert named in str(raised.value)
