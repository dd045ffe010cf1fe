"""The user's and tenant's budgets over the store's usage counters: the loop's `BudgetGate`.

Every model call counts on four counters: the user's day and month, the tenant's day and month
(UTC). With a user or tenant limit set, the call first reserves its worst case on all four, each
counter with a limit refusing when the reservation would take it past that limit; after the call
its usage replaces the reservation. Without one, nothing is reserved and the usage is only added.

The tenant is a claim of the run's identity (`STEPLINE_TENANT_CLAIM`, such as `org_id` or
`custom:tenant`); unset, or a caller whose token lacks the claim, counts in the one tenant
`default`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..loop.budget import BudgetStop, CallEstimate, Reservation
from ..loop.limits import LimitName, Limits
from ..loop.state import UsageTotals
from ..store.usage_counters import NANO, Ceiling, CounterKey, CounterValue, UsageCounters, period_keys

__all__ = ["DEFAULT_TENANT", "CounterGate", "tenant_of"]

DEFAULT_TENANT = "default"


def tenant_of(claims: Mapping[str, object] | None, claim: str | None) -> str:
    """The tenant a caller belongs to: the claim's value, else the one default tenant."""
    if not claim or not claims:
        return DEFAULT_TENANT
    value = claims.get(claim)
    return str(value) if isinstance(value, str | int) and str(value) else DEFAULT_TENANT


_CEILINGS: dict[str, tuple[LimitName, LimitName]] = {
    "user_day": ("user_day_tokens", "user_day_usd"),
    "user_month": ("user_month_tokens", "user_month_usd"),
    "tenant_day": ("tenant_day_tokens", "tenant_day_usd"),
    "tenant_month": ("tenant_month_tokens", "tenant_month_usd"),
}
"""The shared counters, in the order of `CounterGate.keys`, with their limits."""


def _nano(usd: float | None) -> int:
    return math.ceil(usd * NANO) if usd is not None else 0


@dataclass(slots=True)
class _Held:
    counters: UsageCounters
    keys: list[CounterKey]
    reserved: tuple[int, int]
    agent: str | None

    def settle(self, usage: UsageTotals) -> None:
        used = (usage.total_tokens, _nano(usage.cost_usd))
        priced = usage.cost_usd is not None or usage.empty
        self.counters.settle(self.keys, reserved=self.reserved, used=used, agent=self.agent, priced=priced)


@dataclass(slots=True)
class CounterGate:
    """The budgets of one user of one tenant, for the calls of one run."""

    counters: UsageCounters
    user_id: str
    tenant: str
    agent: str | None
    clock: Callable[[], int]

    def keys(self) -> list[CounterKey]:
        now = self.clock()
        return [*period_keys("user", self.user_id, now), *period_keys("tenant", self.tenant, now)]

    def reserve(self, estimate: CallEstimate, limits: Limits) -> Reservation | BudgetStop:
        keys = self.keys()
        if not limits.shared:
            return _Held(self.counters, keys, (0, 0), self.agent)
        ceilings: list[Ceiling] = []
        for key, (name, (token_limit, usd_limit)) in zip(keys, _CEILINGS.items(), strict=True):
            tokens, usd = limits.value(token_limit), limits.value(usd_limit)
            if usd is not None and estimate.usd is None:  # a USD budget over a model without a price
                return BudgetStop(usd_limit, usd, 0, 0)
            ceilings.append(
                Ceiling(key, name, tokens=int(tokens) if tokens is not None else None, nano_usd=_nano(usd) or None)
            )
        worst = (estimate.tokens, _nano(estimate.usd))
        refused = self.counters.reserve(ceilings, *worst)
        if refused is None:
            return _Held(self.counters, keys, worst, self.agent)
        return _stop(refused, self.counters.read(refused.key), estimate)


def _stop(refused: Ceiling, value: CounterValue, estimate: CallEstimate) -> BudgetStop:
    token_limit, usd_limit = _CEILINGS[refused.name]
    if refused.tokens is not None and value.committed_tokens + estimate.tokens > refused.tokens:
        return BudgetStop(token_limit, refused.tokens, value.committed_tokens, estimate.tokens)
    limit = (refused.nano_usd or 0) / NANO
    return BudgetStop(usd_limit, limit, value.committed_nano_usd / NANO, estimate.usd or 0)
