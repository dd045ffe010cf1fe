"""The loop's durable state between steps, and what a step says happens next.

`LoopState` is everything a fresh process needs to run the next step: the conversation so far as
model messages, the response messages of completed steps (the *checkpoint* a retry
starts from: assistant tool calls and their tool results, so completed tools never run again), a record per
step, the tool calls waiting for a human or a client, usage and retries. It is a versioned wire
model: the AWS path stores it between Lambda invocations.

Checkpoint schema versions (a reader keeps accepting every listed version; each has a frozen
fixture under tests/fixtures/checkpoints/):

- 1: first version.

A step returns a `StepOutcome`, a small tagged union whose `kind` the Step Functions `Choice`
state routes on: `continue`, `await-approval`, `await-client`, `finished`, `failed`, `aborted`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import Field, JsonValue

from ..protocol._base import WireModel
from ..protocol.chunks import ProviderMetadata
from ..protocol.metadata import RetryRecord
from ..protocol.model_messages import ModelMessage

__all__ = [
    "CHECKPOINT_SCHEMA_VERSION",
    "SCHEMA_VERSION_SUMMARIES",
    "LoopState",
    "OutcomeKind",
    "PendingApproval",
    "PendingBudget",
    "StepOutcome",
    "StepRecord",
    "ToolCallRecord",
    "ToolResultRecord",
    "UsageTotals",
]

CHECKPOINT_SCHEMA_VERSION: Final = 1
SCHEMA_VERSION_SUMMARIES: Final[dict[int, str]] = {1: "first version"}


class UsageTotals(WireModel):
    """Token usage summed over calls; a count no call reported stays None (not 0)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | None = None
    """What the calls cost in USD, when every call that used tokens had a known price (else None)."""

    @property
    def empty(self) -> bool:
        """No call counted yet (the start of a sum)."""
        return self.input_tokens is None and self.output_tokens is None and self.cost_usd is None

    def plus(self, other: UsageTotals) -> UsageTotals:
        """The sum; unknown + unknown stays unknown, and a cost is known only if both sides' are."""

        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        if self.empty or other.empty:
            cost = other.cost_usd if self.empty else self.cost_usd
        else:
            known = self.cost_usd is not None and other.cost_usd is not None
            cost = round((self.cost_usd or 0) + (other.cost_usd or 0), 9) if known else None
        return UsageTotals(
            input_tokens=add(self.input_tokens, other.input_tokens),
            output_tokens=add(self.output_tokens, other.output_tokens),
            reasoning_tokens=add(self.reasoning_tokens, other.reasoning_tokens),
            cached_input_tokens=add(self.cached_input_tokens, other.cached_input_tokens),
            cache_write_tokens=add(self.cache_write_tokens, other.cache_write_tokens),
            cost_usd=cost,
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens (an unknown count as 0)."""
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def to_metadata(self) -> dict[str, int | float] | None:
        """The metadata `usage` object, or None while input or output counts are unknown."""
        if self.input_tokens is None or self.output_tokens is None:
            return None
        wire = self.model_dump(by_alias=True, exclude_none=True)
        return {k: v for k, v in wire.items() if isinstance(v, int | float)}


class ToolCallRecord(WireModel):
    """One tool call as the model made it (input parsed; `invalid` when it could not be used)."""

    tool_call_id: str
    tool_name: str
    input: JsonValue = None
    provider_executed: bool | None = None
    dynamic: bool | None = None
    invalid: bool | None = None
    error_text: str | None = None
    title: str | None = None
    provider_metadata: ProviderMetadata | None = None


class ToolResultRecord(WireModel):
    """One tool outcome: an output, an error text, or a denial."""

    tool_call_id: str
    tool_name: str
    output: JsonValue = None
    error_text: str | None = None
    denied: bool | None = None
    denial_reason: str | None = None


class StepRecord(WireModel):
    """What one model step did (the SDK's `StepResult`, trimmed to what later steps need)."""

    step_number: int
    finish_reason: str
    raw_finish_reason: str | None = None
    text: str = ""
    reasoning_text: str | None = None
    tool_calls: list[ToolCallRecord] = Field(default_factory=list[ToolCallRecord])
    tool_results: list[ToolResultRecord] = Field(default_factory=list[ToolResultRecord])
    usage: UsageTotals = Field(default_factory=UsageTotals)
    warnings: list[dict[str, JsonValue]] = Field(default_factory=list[dict[str, JsonValue]])
    response_id: str | None = None
    model_id: str | None = None
    provider_metadata: ProviderMetadata | None = None
    response_messages: list[ModelMessage] = Field(default_factory=list[ModelMessage])
    """This step's messages only (the SDK's v7 `step.response.messages`)."""
    request_messages: list[ModelMessage] | None = None
    """The prompt sent, with `Include(request_messages=True)` (off by default: it can be large)."""
    request_body: dict[str, JsonValue] | None = None
    """The provider request body, with `Include(request_body=True)` (off by default)."""


class PendingApproval(WireModel):
    """A tool call waiting for a human decision; the server's record is the only authority."""

    approval_id: str
    tool_call: ToolCallRecord
    signature: str | None = None
    reason: str | None = None
    requested_at: int


class PendingBudget(WireModel):
    """A model call a limit held back, waiting for a person to raise the limit for this run or deny."""

    approval_id: str
    limit: str
    """The limit's name (`stepline.loop.limits.LimitName`, such as `user_day_usd`)."""
    value: float
    spent: float
    needed: float
    message: str
    """The sentence the budget request shows ("this answer needs about $0.40 more than …")."""
    requested_at: int


class LoopState(WireModel):
    """The checkpoint between steps."""

    schema_version: Literal[1] = CHECKPOINT_SCHEMA_VERSION
    run_id: str
    message_id: str
    started_at: int
    messages: list[ModelMessage]
    """The conversation before this run's first step (without the instructions)."""
    response_messages: list[ModelMessage] = Field(default_factory=list[ModelMessage])
    """Assistant and tool messages of the completed steps, carried into every later request."""
    steps: list[StepRecord] = Field(default_factory=list[StepRecord])
    pending_approvals: list[PendingApproval] = Field(default_factory=list[PendingApproval])
    pending_client_calls: list[ToolCallRecord] = Field(default_factory=list[ToolCallRecord])
    pending_budget: PendingBudget | None = None
    """The budget request the run waits on (`stepline.loop.budget_request`)."""
    raised_limits: dict[str, float] = Field(default_factory=dict[str, float])
    """Limits a person raised for this run (by name), over the agent's and deployment's."""
    usage: UsageTotals = Field(default_factory=UsageTotals)
    retries: list[RetryRecord] = Field(default_factory=list[RetryRecord])
    segment_start: int = 0
    """Index of the first step since the run last resumed; stop conditions see only those steps,
    as `streamText` counts only the steps of the current request."""

    def model_post_init(self, context: object, /) -> None:
        super().model_post_init(context)
        self.__pydantic_fields_set__.update({"schema_version", "response_messages", "steps"})

    @property
    def step_number(self) -> int:
        """The number of the next step (0-based)."""
        return len(self.steps)


OutcomeKind = Literal["continue", "await-approval", "await-client", "finished", "failed", "aborted"]


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """What happens after a step. Only `kind` and small ids need to cross a Step Functions state."""

    kind: OutcomeKind
    state: LoopState
    finish_reason: str | None = None
    error_text: str | None = None
    error_code: str | None = None
    retryable: bool = False
    inspection: dict[str, Any] | None = None
    """With `LoopConfig.inspect`: the step's request as sent, its response summary and its timings
    (`startedAt`, `endedAt`, `attempts`), for the step's record; never part of the state."""
