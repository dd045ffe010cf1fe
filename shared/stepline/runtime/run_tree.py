"""A run tree's budget: a run and its sub-agents' runs spend against the root's run limits together.

A run whose agent has agent tools is the root of a tree: each agent-tool call is a child run, whose
own calls may start grandchildren. The root's `run_tokens` and `run_usd` cover the whole tree:
every model call of every run in it reserves its worst case on one counter of the user's,
`run:{day}:{rootRunId}` (`day` the root's start day, UTC), and settles its usage there, through
the same atomic reserve-then-settle as the user's and tenant's budgets
(`stepline.runtime.budget_gate`). The counter refuses a call that would take the tree past its
ceiling; the call's run then pauses on a budget request of `run_tokens` or `run_usd`, as at its
own limit.

The ceilings a child counts against are the root's as they were when the child started (what a
person had raised on the root by then included), carried on the child's parent link as `tree`:
`{"rootRunId", "day", "runTokens", "runUsd"}`; a grandchild inherits its parent's. Approving a
child's budget request raises that child's run limit (`LoopState.raised_limits`), and its tree
ceiling with it: the raised value where it is above the inherited one. When a run goes on after
its children ended, it takes their raises too (`take_raises`: each of its run limits becomes the
highest a person raised it to below), so one decision raises the answer's budget: the lead does
not stop again at the limit the person just raised. A tree without a ceiling (the root sets
neither limit) is not counted, and its children carry no `tree`.

A child that carries no tree but has agent tools of its own is the root of its own subtree (its
own run limits cover its sub-agents). The root's own check of its limits against its own usage
stays. What the tree may pass its ceiling by is what calls use beyond their worst case (a
provider ignoring `max_output_tokens`): at most one call per run of the tree at once, as each run
makes its model calls one after the other.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from pydantic import JsonValue

from ..loop.budget_request import effective_limits
from ..loop.limits import Limits
from ..loop.state import LoopState
from ..store.records import RunRecord
from ..store.usage_counters import CounterKey

__all__ = ["TREE_LIMITS", "RunTree", "take_raises", "tree_link", "tree_of"]

TREE_LIMITS = ("run_tokens", "run_usd")
"""The run limits a tree shares."""


@dataclass(frozen=True, slots=True)
class RunTree:
    """The tree a run belongs to, and the ceilings it inherited (a root's are its own limits)."""

    root_run_id: str
    day: str
    """The root's start day, UTC (`2026-12-02`)."""
    root: bool
    tokens: int | None = None
    usd: float | None = None

    def key(self, user_id: str) -> CounterKey:
        return CounterKey("user", user_id, f"run:{self.day}:{self.root_run_id}")

    def ceilings(self, limits: Limits, raised: Mapping[str, float]) -> tuple[int | None, float | None]:
        """The tree's token and USD ceilings for this run's calls (None: no ceiling).

        `limits` are the run's own, with what a person raised on it (`raised`) applied.
        """
        if self.root:
            return limits.run_tokens, limits.run_usd
        tokens = _higher(self.tokens, raised.get("run_tokens"))
        return (math.ceil(tokens) if tokens is not None else None), _higher(self.usd, raised.get("run_usd"))


def _higher(inherited: float | None, raised: float | None) -> float | None:
    if inherited is None:
        return None
    return inherited if raised is None else max(inherited, raised)


def _day(ms: int) -> str:
    return f"{datetime.fromtimestamp(ms / 1000, tz=UTC):%Y-%m-%d}"


def tree_of(run: RunRecord, *, delegates: bool) -> RunTree | None:
    """The run's tree: the one its parent link carries, else its own when it `delegates` (has agent tools)."""
    parent = (run.context or {}).get("parent")
    if isinstance(parent, dict):
        link = cast(dict[str, Any], parent).get("tree")
        if isinstance(link, dict):
            tree = cast(dict[str, Any], link)
            tokens, usd = tree.get("runTokens"), tree.get("runUsd")
            return RunTree(
                root_run_id=str(tree["rootRunId"]),
                day=str(tree["day"]),
                root=False,
                tokens=int(tokens) if isinstance(tokens, int | float) else None,
                usd=float(usd) if isinstance(usd, int | float) else None,
            )
    return RunTree(root_run_id=run.run_id, day=_day(run.started_at), root=True) if delegates else None


def tree_link(run: RunRecord, limits: Limits, raised: Mapping[str, float]) -> dict[str, JsonValue] | None:
    """The `tree` of a parent link for a child `run` starts now (None: the tree has no ceiling).

    `limits` are the run's own with `raised` applied (`budget_request.effective_limits`).
    """
    tree = tree_of(run, delegates=True)
    assert tree is not None
    tokens, usd = tree.ceilings(limits, raised)
    if tokens is None and usd is None:
        return None
    return {"rootRunId": tree.root_run_id, "day": tree.day, "runTokens": tokens, "runUsd": usd}


def take_raises(state: LoopState, limits: Limits | None, below: Sequence[Mapping[str, float]]) -> LoopState:
    """The state with its children's raises of the tree's limits (`below`, each child's `raised_limits`).

    A limit the run has (with its own raises) goes up to the highest raise below; one it does not
    have is left unset.
    """
    current = effective_limits(limits, state)
    if current is None or not below:
        return state
    raised = dict(state.raised_limits)
    for name in TREE_LIMITS:
        value = current.value(name)
        higher = max((r[name] for r in below if name in r), default=None)
        if value is not None and higher is not None and higher > value:
            raised[name] = higher
    return state if raised == state.raised_limits else state.model_copy(update={"raised_limits": raised})
