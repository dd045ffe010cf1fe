"""`GET /api/usage`: what the caller spent today and this month (UTC), in total and per agent.

Read from the user's own usage counters (`stepline.store.usage_counters`): the keys are built from
the caller's user id, so another user's usage is never read. `costUsd` is absent when a call of a
model without a price is among the period's (the sum would be a floor, not a cost);
`unpricedCalls` says how many. The deployment's user limits of the period come with it.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from ..loop.limits import Limits
from ..store.usage_counters import NANO, CounterKey, CounterValue, UsageCounters, period_keys
from .bodies import CheckedRoute
from .deps import ServicesDep, User

__all__ = ["PeriodUsage", "Spending", "UsageView", "router"]

router = APIRouter(route_class=CheckedRoute)


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class Spending(_Wire):
    """Tokens, cost and calls of a period (or of one agent in it)."""

    tokens: int
    cost_usd: float | None = None
    """Absent when a call's model has no price."""
    calls: int
    unpriced_calls: int


class PeriodUsage(Spending):
    """One period: `day:2026-12-02` or `month:2026-12`, its agents and the user's limits."""

    period: str
    agents: dict[str, Spending]
    limit_tokens: int | None = None
    limit_usd: float | None = None


class UsageView(_Wire):
    """`GET /api/usage`."""

    day: PeriodUsage
    month: PeriodUsage


def _spending(value: CounterValue) -> dict[str, object]:
    cost = round(value.nano_usd / NANO, 9) if value.unpriced_calls == 0 else None
    return {"tokens": value.tokens, "cost_usd": cost, "calls": value.calls, "unpriced_calls": value.unpriced_calls}


def _period(counters: UsageCounters, key: CounterKey, limits: tuple[int | None, float | None]) -> PeriodUsage:
    agents = {name: Spending.model_validate(_spending(v)) for name, v in sorted(counters.agents(key).items())}
    return PeriodUsage.model_validate(
        {
            **_spending(counters.read(key)),
            "period": key.period,
            "agents": agents,
            "limit_tokens": limits[0],
            "limit_usd": limits[1],
        }
    )


@router.get("/api/usage", tags=["usage"], response_model_by_alias=True, response_model_exclude_none=True)
def usage(user_id: User, services: ServicesDep) -> UsageView:
    """The caller's usage today and this month (UTC), per agent, with the deployment's user limits."""
    day, month = period_keys("user", user_id, services.clock())
    limits = services.limits or Limits()
    counters = services.store.counters
    return UsageView(
        day=_period(counters, day, (limits.user_day_tokens, limits.user_day_usd)),
        month=_period(counters, month, (limits.user_month_tokens, limits.user_month_usd)),
    )
