"""The budget check before every model call: the run's limits here, the shared ones through a gate.

`admit_call` runs before each model call of a step. It takes the call's worst case — its input
bounded by the UTF-8 bytes of the prompt and tool definitions as JSON (a byte-level BPE token, what
OpenAI's and Anthropic's tokenizers use, covers at least one byte; the previous call's input
tokens if that is more), plus its `max_output_tokens` (else `Limits.assumed_output_tokens`), in
tokens and, with the model's price, in USD — and compares it with what is left:

- the run's limits, against the run's own usage (`LoopState`): steps taken, tool calls made,
  tokens and USD spent;
- the user's and tenant's limits, and the run limits of the run's tree (a run and its
  sub-agents' runs, `stepline.runtime.run_tree`), through the `BudgetGate` the runtime installs:
  it *reserves* the worst case on the shared counters atomically
  (`stepline.store.usage_counters`), so runs racing one budget cannot all pass on the same
  remainder.

At a limit the call is not made: `admit_call` returns a `BudgetStop` saying which limit, what was
spent and how much more the call needs. Otherwise the `Admission` it returns prices the call's
usage afterwards and replaces the reservation by what the call used. The bound is deliberately
high (about four bytes make a token of English text), so a call near a limit may be refused
though it would have fit; it is released as soon as the call's real usage is known. A limit is
passed only when a call uses more than its bound (a provider that ignores `max_output_tokens`, a
tokenizer that breaks the byte bound), and then by that call's excess alone.

With a USD limit and a model the price table does not know, the call is refused: its cost cannot
be bounded (`BudgetStop.unpriced`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from ..llm.base import LanguageModel, ModelCallOptions
from ..protocol._json import dumps
from .limits import LimitName, Limits
from .prices import ModelPrice, PriceTable, priced
from .state import LoopState, StepOutcome, UsageTotals

__all__ = [
    "Admission",
    "BudgetGate",
    "BudgetStop",
    "CallEstimate",
    "Reservation",
    "admit_call",
    "over_budget",
    "run_limit_stop",
]

Unit = Literal["tokens", "usd", "tool calls", "steps"]


@dataclass(frozen=True, slots=True)
class CallEstimate:
    """The most one model call is expected to use."""

    input_tokens: int
    output_tokens: int
    usd: float | None
    """None: the model has no price."""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class BudgetStop:
    """A limit the next call would pass: which, its value, what was spent, what the call needs."""

    limit: LimitName
    value: float
    spent: float
    needed: float
    unpriced: str | None = None
    """The model spec when the stop is a USD limit over a model without a price."""
    tree: bool = False
    """A run limit the run shares with its sub-agents (or its lead): the tree's counter refused."""

    @property
    def unit(self) -> Unit:
        if self.limit.endswith("_usd"):
            return "usd"
        return "tool calls" if self.limit == "run_tool_calls" else "steps" if self.limit == "run_steps" else "tokens"

    @property
    def over_by(self) -> float:
        """How much more than the limit the call needs (what a person would raise it by)."""
        return max(self.spent + self.needed - self.value, 0)

    def message(self) -> str:
        """The sentence the budget request shows ("this answer needs about $0.40 more than …")."""
        if self.unpriced is not None:
            return f"{self.unpriced} has no price, so the {_scope(self.limit)} in USD cannot be checked"
        if self.unit in ("tool calls", "steps"):
            return f"this answer has used the {int(self.value)} {self.unit} {_scope(self.limit)} allows"
        shared = ", which its sub-agents share" if self.tree else ""
        return f"this answer needs about {_amount(self.over_by, self.unit)} more than {_scope(self.limit)}{shared}"


def _scope(limit: LimitName) -> str:
    owner, _, rest = limit.partition("_")
    if owner == "run":
        return "this run's limit"
    period = rest.partition("_")[0]
    who = "your" if owner == "user" else "your team's"
    return f"{who} {'daily' if period == 'day' else 'monthly'} budget"


def _amount(value: float, unit: Unit) -> str:
    if unit == "usd":
        return f"${max(value, 0.01):,.2f}"
    return f"{math.ceil(value):,} tokens"


class Reservation(Protocol):
    """A worst case held on the shared counters until the call's usage replaces it."""

    def settle(self, usage: UsageTotals) -> None: ...


class BudgetGate(Protocol):
    """The user's and tenant's limits, and a run tree's (the runtime's, over the store's counters).

    `raised` is what a person raised on this run (`LoopState.raised_limits`, already in `limits`).
    """

    def reserve(
        self, estimate: CallEstimate, limits: Limits, raised: Mapping[str, float] | None = None
    ) -> Reservation | BudgetStop: ...


@dataclass(slots=True)
class Admission:
    """A call that may go ahead: prices its usage and settles its reservation afterwards."""

    prices: PriceTable | None
    model: LanguageModel
    reservation: Reservation | None = None

    def settle(self, usage: UsageTotals) -> UsageTotals:
        """The call's usage with its cost; the shared counters count it instead of the worst case."""
        usage = priced(self.prices, self.model.provider, self.model.model_id, usage)
        if self.reservation is not None:
            self.reservation.settle(usage)
        return usage


def estimate_call(
    options: ModelCallOptions, state: LoopState, limits: Limits, price: ModelPrice | None
) -> CallEstimate:
    tools = [dataclasses.asdict(t) for t in options.tools]
    prompt = dumps({"prompt": [m.to_wire() for m in options.prompt], "tools": tools})
    previous = state.steps[-1].usage.input_tokens if state.steps else None
    input_tokens = max(len(prompt.encode()), previous or 0)
    output_tokens = options.max_output_tokens or limits.assumed_output_tokens
    usd = price.worst_case_usd(input_tokens, output_tokens) if price is not None else None
    return CallEstimate(input_tokens=input_tokens, output_tokens=output_tokens, usd=usd)


def run_limit_stop(limits: Limits, state: LoopState, estimate: CallEstimate, model_spec: str) -> BudgetStop | None:
    """The first of the run's limits the next call would pass (None: within all of them)."""
    if limits.run_steps is not None and state.step_number >= limits.run_steps:
        return BudgetStop("run_steps", limits.run_steps, state.step_number, 1)
    if limits.run_tool_calls is not None:
        made = sum(1 for step in state.steps for call in step.tool_calls if not call.provider_executed)
        if made >= limits.run_tool_calls:
            return BudgetStop("run_tool_calls", limits.run_tool_calls, made, 1)
    if limits.run_tokens is not None and state.usage.total_tokens + estimate.tokens > limits.run_tokens:
        return BudgetStop("run_tokens", limits.run_tokens, state.usage.total_tokens, estimate.tokens)
    if limits.run_usd is not None:
        spent = state.usage.cost_usd
        if estimate.usd is None or (spent is None and not state.usage.empty):
            return BudgetStop("run_usd", limits.run_usd, 0, 0, unpriced=model_spec)
        if (spent or 0) + estimate.usd > limits.run_usd:
            return BudgetStop("run_usd", limits.run_usd, spent or 0, estimate.usd)
    return None


def admit_call(
    limits: Limits | None,
    gate: BudgetGate | None,
    prices: PriceTable | None,
    state: LoopState,
    model: LanguageModel,
    options: ModelCallOptions,
) -> Admission | BudgetStop:
    """Check the call's worst case against the run's limits, then reserve it on the shared ones.

    With a gate the call is counted on the shared counters also when no shared limit is set (the
    usage the caller reads back).
    """
    if limits is None and gate is None:
        return Admission(prices, model)
    limits = limits or Limits()
    spec = f"{model.provider}:{model.model_id}"
    price = prices.price_of(model.provider, model.model_id) if prices is not None else None
    estimate = estimate_call(options, state, limits, price)
    stop = run_limit_stop(limits, state, estimate, spec)
    if stop is not None:
        return stop
    if gate is None:
        return Admission(prices, model)
    reserved = gate.reserve(estimate, limits, state.raised_limits)
    if isinstance(reserved, BudgetStop):
        if reserved.limit.endswith("_usd") and estimate.usd is None:
            return BudgetStop(reserved.limit, reserved.value, 0, 0, unpriced=spec, tree=reserved.tree)
        return reserved
    return Admission(prices, model, reserved)


def over_budget(state: LoopState, stop: BudgetStop) -> StepOutcome:
    """A limit the next call would pass: the call is not made, and the run ends with what it has."""
    return StepOutcome("failed", state, finish_reason="error", error_text=stop.message(), error_code="budget_exceeded")
