"""The user's and tenant's budgets over the store's usage counters: the loop's `BudgetGate`.

Every model call counts on the user's day and month counters (UTC), and on the tenant's day and
month when the deployment has a tenant limit (in `STEPLINE_LIMITS` or in any of its agents'):
nothing reads a tenant's counters but its limits, and without one they would be one item that
every call of the deployment's default tenant writes, a hot key at scale (docs/scale.md). With a
user or tenant limit set, the call first reserves its worst case on those counters, each counter
with a limit refusing when the reservation would take it past that limit; after the call its usage
replaces the reservation. Without one, nothing is reserved and the usage is only added.

The tenant is a claim of the run's identity (`STEPLINE_TENANT_CLAIM`, such as `org_id` or
`custom:tenant`); unset, or a caller whose token lacks the claim, counts in the one tenant
`default`.

A run of a tree with a ceiling (`stepline.runtime.run_tree`) also reserves on its tree's counter,
in the same atomic reservation as the user's and tenant's when one of theirs has a limit (else on
the tree's alone); the tree's refuses at the tree's ceiling (a `run_tokens` or `run_usd` stop).
The tree's counter is settled after the others, without a per-agent share.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..loop.budget import BudgetStop, CallEstimate, Reservation
from ..loop.limits import LimitName, Limits
from ..loop.state import UsageTotals
from ..store.usage_counters import NANO, Ceiling, CounterKey, CounterValue, UsageCounters, period_keys
from .run_tree import RunTree

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
_TREE = "run_tree"
_LIMITS: dict[str, tuple[LimitName, LimitName]] = {**_CEILINGS, _TREE: ("run_tokens", "run_usd")}


def _nano(usd: float | None) -> int:
    return math.ceil(usd * NANO) if usd is not None else 0


@dataclass(slots=True)
class _Held:
    counters: UsageCounters
    keys: list[CounterKey]
    reserved: tuple[int, int]
    agent: str | None
    tree: CounterKey | None = None
    """The run tree's counter, holding the call's worst case (no per-agent share: nothing reads one)."""
    tree_reserved: tuple[int, int] = (0, 0)

    def settle(self, usage: UsageTotals) -> None:
        used = (usage.total_tokens, _nano(usage.cost_usd))
        priced = usage.cost_usd is not None or usage.empty
        self.counters.settle(self.keys, reserved=self.reserved, used=used, agent=self.agent, priced=priced)
        if self.tree is not None:
            self.counters.settle([self.tree], reserved=self.tree_reserved, used=used, priced=priced)


@dataclass(slots=True)
class CounterGate:
    """The budgets of one user of one tenant, and of the run's tree, for the calls of one run."""

    counters: UsageCounters
    user_id: str
    tenant: str
    agent: str | None
    clock: Callable[[], int]
    tree: RunTree | None = field(default=None)
    count_tenant: bool = True
    """Whether the tenant's counters count calls without a tenant limit of the call's own (the
    deployment has one elsewhere: `Services.counts_tenants`). A call under a tenant limit always does."""

    def keys(self, limits: Limits) -> list[CounterKey]:
        """What a call under `limits` counts on: the user's day and month, then the tenant's (see `count_tenant`)."""
        now = self.clock()
        user = period_keys("user", self.user_id, now)
        tenant = self.count_tenant or limits.tenant
        return [*user, *period_keys("tenant", self.tenant, now)] if tenant else [*user]

    def reserve(
        self, estimate: CallEstimate, limits: Limits, raised: Mapping[str, float] | None = None
    ) -> Reservation | BudgetStop:
        keys = self.keys(limits)
        tree = self._tree_ceiling(limits, raised or {})
        if tree is not None and tree.nano_usd is not None and estimate.usd is None:
            return BudgetStop("run_usd", tree.nano_usd / NANO, 0, 0, tree=True)  # its cost cannot be bounded
        worst = (estimate.tokens, _nano(estimate.usd))
        on_tree: dict[str, Any] = {"tree": tree.key, "tree_reserved": worst} if tree is not None else {}
        if not limits.shared:  # the user's and tenant's counters only count; the tree's (if any) reserves alone
            if tree is not None and (refused := self.counters.reserve([tree], *worst)) is not None:
                return _stop(refused, self.counters.read(refused.key), estimate)
            return _Held(self.counters, keys, (0, 0), self.agent, **on_tree)
        ceilings: list[Ceiling] = []
        ceilings_of = list(_CEILINGS.items())[: len(keys)]  # the keys are the user's, then the tenant's if counted
        for key, (name, (token_limit, usd_limit)) in zip(keys, ceilings_of, strict=True):
            tokens, usd = limits.value(token_limit), limits.value(usd_limit)
            if usd is not None and estimate.usd is None:  # a USD budget over a model without a price
                return BudgetStop(usd_limit, usd, 0, 0)
            ceilings.append(
                Ceiling(key, name, tokens=int(tokens) if tokens is not None else None, nano_usd=_nano(usd) or None)
            )
        refused = self.counters.reserve([*ceilings, *([tree] if tree else [])], *worst)  # all or none, at once
        if refused is None:
            return _Held(self.counters, keys, worst, self.agent, **on_tree)
        return _stop(refused, self.counters.read(refused.key), estimate)

    def _tree_ceiling(self, limits: Limits, raised: Mapping[str, float]) -> Ceiling | None:
        if self.tree is None:
            return None
        tokens, usd = self.tree.ceilings(limits, raised)
        if tokens is None and usd is None:
            return None
        return Ceiling(self.tree.key(self.user_id), _TREE, tokens=tokens, nano_usd=_nano(usd) if usd else None)


def _stop(refused: Ceiling, value: CounterValue, estimate: CallEstimate) -> BudgetStop:
    token_limit, usd_limit = _LIMITS[refused.name]
    tree = refused.name == _TREE
    if refused.tokens is not None and value.committed_tokens + estimate.tokens > refused.tokens:
        return BudgetStop(token_limit, refused.tokens, value.committed_tokens, estimate.tokens, tree=tree)
    limit = (refused.nano_usd or 0) / NANO
    return BudgetStop(usd_limit, limit, value.committed_nano_usd / NANO, estimate.usd or 0, tree=tree)
