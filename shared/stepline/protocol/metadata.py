"""Message metadata, schema version 1: the message-level facts Stepline records (times, usage, errors).

Every field but `schemaVersion` is written only when it is known: an unknown value is absent,
never an empty string, a zero or an empty object or array. `completedAt` stays absent while the run
is streaming or waiting. Run status, step index and approval state are not metadata (they live in
the run, step and approval records).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import Field, JsonValue, StringConstraints, model_validator

from ._base import WireModel

__all__ = ["AbortInfo", "ErrorInfo", "MessageMetadata", "RetryRecord", "SubAgentRun", "Usage"]

NonEmpty = Annotated[str, StringConstraints(min_length=1)]
EpochMs = Annotated[int, Field(ge=0)]
Count = Annotated[int, Field(ge=0)]


class Usage(WireModel):
    """Aggregated token usage. A count the provider does not report is absent (0 would be a claim)."""

    input_tokens: Count
    output_tokens: Count
    reasoning_tokens: Count | None = None
    cached_input_tokens: Count | None = None
    cache_write_tokens: Count | None = None
    cost_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    """USD, from the deployment's price table; absent when a model's price is unknown."""


class RetryRecord(WireModel):
    """One automatic retry of a model call."""

    reason: NonEmpty
    attempt: Annotated[int, Field(ge=1)]
    at: EpochMs | None = None


class ErrorInfo(WireModel):
    """A real execution error (never a client rendering problem)."""

    message: NonEmpty
    code: NonEmpty | None = None
    at: EpochMs


class AbortInfo(WireModel):
    """A confirmed user or server abort (a dropped connection is not one)."""

    reason: NonEmpty | None = None
    at: EpochMs


class SubAgentRun(WireModel):
    """One sub-agent call's child run and its own usage (its children's included), on the parent's message."""

    tool_call_id: NonEmpty
    agent: NonEmpty
    run_id: NonEmpty
    usage: Usage | None = None


class MessageMetadata(WireModel):
    """`UIMessage.metadata` as Stepline writes it (schema version 1)."""

    model_config: ClassVar[Any] = {"extra": "forbid"}

    schema_version: Literal[1] = 1
    model: NonEmpty | None = None
    provider: NonEmpty | None = None
    client: Literal["web", "extension", "feishu", "automation"] | None = None
    started_at: EpochMs | None = None
    completed_at: EpochMs | None = None
    finish_reason: NonEmpty | None = None
    """The upstream value as reported (`unknown` included: it is only invalid as `finish.finishReason`)."""
    usage: Usage | None = None
    """The run's tokens, its sub-agents' included."""
    sub_agents: Annotated[list[SubAgentRun], Field(min_length=1)] | None = None
    """Stepline extension: each sub-agent call's child run, with its usage (part of `usage`)."""
    retries: Annotated[list[RetryRecord], Field(min_length=1)] | None = None
    error: ErrorInfo | None = None
    abort: AbortInfo | None = None
    run_id: NonEmpty | None = None
    """Stepline extension: the run that wrote this message, so a client can resume or abort it."""
    context: dict[str, JsonValue] | None = None
    """Stepline extension: how the run's context was managed: `history` (what the turn carried of
    the conversation and what it left out) and, after a compaction, `compactions` (how many) and
    `lastCompaction` (its marker: what it summarized, tokens before and after)."""

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self.__pydantic_fields_set__.add("schema_version")

    @model_validator(mode="after")
    def _completed_after_start(self) -> Self:
        if self.started_at is not None and self.completed_at is not None and self.completed_at < self.started_at:
            raise ValueError("completedAt is earlier than startedAt")
        return self

    def to_wire(self) -> dict[str, Any]:
        """The JSON object, with unknown values absent (None fields are never written)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def from_wire(cls, value: JsonValue) -> MessageMetadata:
        """Validate stored or streamed metadata."""
        return cls.model_validate(value)
