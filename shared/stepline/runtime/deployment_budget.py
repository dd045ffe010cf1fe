"""A deployment's prices, limits and tenant claim, from its environment (pure).

- `STEPLINE_PRICES`: the path of a JSON file of entries in the form of `PriceTable.parse`
  (`{"openai:gpt-5.1": {"input": 1.25, "cachedInput": 0.125, "output": 10}}`); they replace or
  add to the table Stepline ships.
- `STEPLINE_LIMITS`: a JSON object of `Limits` (`{"user_day_usd": 5, "run_tool_calls": 50}`), the
  deployment's limits; an agent's own `limits` take precedence setting by setting.
- `STEPLINE_TENANT_CLAIM`: the identity claim naming a caller's tenant (unset: one tenant).
- `STEPLINE_ADMIN_CLAIM`: the claim that makes a caller an admin, who may approve budget requests
  of user and tenant limits: `claim` (its value `true`) or `claim=value` (the value, or one of a
  list's, such as `cognito:groups=budget-admins`); unset: only signed approval links can.

A missing file, a malformed entry or limit raises a `StepLineError` naming the variable and the
setting: `stepline dev` and every Lambda read these when they start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..loop.limits import Limits, LimitsError
from ..loop.price_list import DEFAULT_PRICES
from ..loop.prices import PriceTable
from ..protocol._json import loads_strict

__all__ = [
    "ADMIN_VARIABLE",
    "LIMITS_VARIABLE",
    "PRICES_VARIABLE",
    "TENANT_VARIABLE",
    "DeploymentBudget",
    "budget_from_env",
]

PRICES_VARIABLE = "STEPLINE_PRICES"
LIMITS_VARIABLE = "STEPLINE_LIMITS"
TENANT_VARIABLE = "STEPLINE_TENANT_CLAIM"
ADMIN_VARIABLE = "STEPLINE_ADMIN_CLAIM"


@dataclass(frozen=True, slots=True)
class DeploymentBudget:
    """What a deployment's environment says about prices, limits and tenants."""

    prices: PriceTable = DEFAULT_PRICES
    limits: Limits | None = None
    tenant_claim: str | None = None
    admin_claim: str | None = None


def budget_from_env(env: Mapping[str, str]) -> DeploymentBudget:
    """The deployment's budget settings (each unset or empty variable: its default)."""
    path = env.get(PRICES_VARIABLE, "").strip()
    prices = DEFAULT_PRICES.merged(PriceTable.from_file(Path(path), source=PRICES_VARIABLE)) if path else DEFAULT_PRICES
    text = env.get(LIMITS_VARIABLE, "").strip()
    limits = None
    if text:
        try:
            raw = loads_strict(text)
        except ValueError as error:
            raise LimitsError(f"{LIMITS_VARIABLE}: not JSON ({error})") from None
        limits = Limits.parse(raw, source=LIMITS_VARIABLE)
    tenant, admin = (env.get(name, "").strip() or None for name in (TENANT_VARIABLE, ADMIN_VARIABLE))
    return DeploymentBudget(prices, limits, tenant, admin)
