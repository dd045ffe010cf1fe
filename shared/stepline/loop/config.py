"""`LoopConfig`: everything about a run that is not its state (the `streamText` parameters).

Pythonic names for the SDK's `streamText` options. A config holds
callables (tools, callbacks, policies), so it is rebuilt in each process from settings; only
`LoopState` is stored between steps.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, JsonValue

from ..llm.base import LanguageModel, ToolChoice
from ..protocol.model_messages import ProviderOptions, SystemModelMessage
from .budget import BudgetGate
from .callbacks import Callbacks
from .generated_files import GeneratedFiles
from .limits import Limits
from .prices import PriceTable
from .stop import StopCondition, is_step_count
from .tool_guard import ToolGuard
from .tools import ApprovalPolicy, ApprovalSetting, Tool

__all__ = [
    "AbortSignal",
    "CallSettings",
    "Include",
    "Instructions",
    "LoopConfig",
    "PrepareStep",
    "PrepareStepResult",
    "RepairToolCall",
    "Timeouts",
]

Instructions = str | SystemModelMessage | Sequence[SystemModelMessage]
"""A system prompt: a string, one system message (with provider options), or several blocks."""


class AbortSignal:
    """Cooperative cancellation: the loop checks it between parts and stops with an `abort` part."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.reason: str | None = None

    DEFAULT_REASON = "AbortError: This operation was aborted"
    """What `abort` reports without a reason (the text the SDK's `AbortSignal` gives)."""

    def abort(self, reason: str | None = None) -> None:
        """Ask the run to stop."""
        self.reason = reason if reason is not None else self.DEFAULT_REASON
        self._event.set()

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        """Return once aborted."""
        await self._event.wait()


@dataclass(frozen=True, slots=True, kw_only=True)
class CallSettings:
    """Sampling settings passed to every model call (None: provider default)."""

    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop_sequences: list[str] | None = None
    seed: int | None = None
    reasoning: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeouts:
    """Time limits in seconds (None: no limit).

    `total` bounds the run, `step` one step, `chunk` the gap between model parts, `tool` each tool
    execution (per-tool overrides in `tools`). `request` is the model's HTTP request timeout (the
    connection and each read of the stream), given to the provider client when an `Agent` names its
    model as `provider:model-id`; the loop itself does not read it.
    """

    total: float | None = None
    step: float | None = None
    chunk: float | None = None
    tool: float | None = None
    tools: Mapping[str, float] = field(default_factory=dict[str, float])
    request: float | None = None

    def for_tool(self, name: str) -> float | None:
        return self.tools.get(name, self.tool)


@dataclass(frozen=True, slots=True, kw_only=True)
class Include:
    """What step records keep (off by default: request bodies can be large)."""

    request_body: bool = False
    request_messages: bool = False
    raw_chunks: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PrepareStepResult:
    """Per-step overrides; None keeps the outer value."""

    model: LanguageModel | None = None
    messages: list[Any] | None = None
    instructions: Instructions | None = None
    active_tools: Sequence[str] | None = None
    tool_choice: ToolChoice | None = None


PrepareStep = Callable[..., "PrepareStepResult | None | Awaitable[PrepareStepResult | None]"]
"""Called before each step with keyword arguments `step_number`, `steps`, `model`, `messages`,
`instructions`, `runtime_context`."""

RepairToolCall = Callable[..., "Awaitable[dict[str, Any] | None] | dict[str, Any] | None"]
"""Called with `tool_call` (`{"toolCallId", "toolName", "input"}`, input as JSON text), `tools`,
`error` and `messages`; returns a repaired tool call of the same shape, or None to give up."""


def _now_ms() -> int:
    return int(time.time() * 1000)


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:24]}"


@dataclass(kw_only=True)
class LoopConfig:
    """The parameters of a run. See the field comments for the SDK names."""

    model: LanguageModel
    instructions: Instructions | None = None
    tools: Sequence[Tool] = ()
    tool_choice: ToolChoice | None = None
    active_tools: Sequence[str] | None = None
    tool_order: Sequence[str] | None = None
    """Listed names first, then the rest alphabetically: a stable order helps provider caches."""
    tool_approval: Mapping[str, ApprovalSetting | ApprovalPolicy] | ApprovalPolicy | None = None
    approval_secret: bytes | None = None
    """When set, approval requests are signed (HMAC-SHA256) and decisions must carry a valid signature."""
    repair_tool_call: RepairToolCall | None = None
    stop_when: StopCondition | Sequence[StopCondition] = field(default_factory=lambda: is_step_count(1))
    prepare_step: PrepareStep | None = None
    settings: CallSettings = field(default_factory=CallSettings)
    max_retries: int = 2
    timeouts: Timeouts = field(default_factory=Timeouts)
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    provider_options: ProviderOptions = field(default_factory=dict[str, dict[str, JsonValue]])
    tools_context: Any = None
    runtime_context: Any = None
    output: type[BaseModel] | None = None
    """Structured output: the final text is parsed into this model."""
    output_schema: dict[str, JsonValue] | None = None
    """Structured output from a JSON Schema (when there is no `output` model): the model is asked
    for JSON of this schema; the caller parses the final text."""
    include: Include = field(default_factory=Include)
    allow_system_in_messages: bool = False
    callbacks: Callbacks = field(default_factory=Callbacks)
    abort: AbortSignal | None = None
    tool_guard: ToolGuard | None = None
    """Exactly-once execution across processes (the AWS step handler installs a store-backed one)."""
    generated_files: GeneratedFiles | None = None
    """Stores files provider tools generate, so results carry a reference (the step handler installs
    one writing artifacts to S3); None streams results as the provider sent them."""
    tracer: Any = None
    """An OpenTelemetry tracer; spans per run, step, model call and tool when set (off otherwise)."""
    meter: Any = None
    """An OpenTelemetry meter; the GenAI client metrics (token usage, operation duration) when set."""
    trace_content: bool = False
    """Spans carry the conventions' opt-in content (instructions, messages, tool definitions, tool
    arguments and results), masked and sized; off by default."""
    prices: PriceTable | None = None
    """Prices per model: each step's usage gets its `cost_usd` (None: costs stay unknown)."""
    limits: Limits | None = None
    """Spending limits, checked before every model call (`stepline.loop.budget`)."""
    budget_gate: BudgetGate | None = None
    """The user's and tenant's budgets (the runtime installs one over the store's counters)."""
    budget_requests: bool = False
    """At a limit, pause on a budget request a person decides (`stepline.loop.budget_request`)
    instead of failing; the durable runtime sets it (in process the run ends `budget_exceeded`)."""
    inspect: bool = False
    """Each step keeps its request as sent and its timings for the run inspector (`StepOutcome.inspection`)."""
    agent_name: str | None = None
    """The agent's name, for the `invoke_agent {name}` span."""
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    clock: Callable[[], int] = _now_ms
    new_id: Callable[[str], str] = _new_id
    retry_base_delay: float = 1.0
    retry_max_delay: float = 30.0

    def __post_init__(self) -> None:
        names = [t.name for t in self.tools]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise ValueError(f"duplicate tool names: {sorted(duplicates)}")
        if self.max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self._tools_by_name = {t.name: t for t in self.tools}

    def tool(self, name: str) -> Tool | None:
        """The tool called `name`, if declared."""
        return self._tools_by_name.get(name)
