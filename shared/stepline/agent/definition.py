"""`Agent`: one declarative definition of an agent, run by `stepline dev`, `stepline run` and every Lambda.

    support = Agent(
        name="support",
        model="openai:gpt-5.1",
        instructions=lambda context: f"You help {context.claims.get('name', 'the user')}.",
        tools=[lookup_order, refund],
        temperature=0.2,
        stop_when=is_step_count(8),
    )

Every setting has the meaning it has in `stream_text` (the AI SDK's `streamText` options): an agent
only holds them, and `loop_config` turns them into the `LoopConfig` of one step, so there is one
loop, in process and on the durable path alike. What a durable run adds is written in
docs/agents.md: the agent is rebuilt from its module in every process, the run context is fixed when
the run starts, and a run records the agent's name and `fingerprint()`.

A definition error (an unknown setting, two tools of one name, a setting naming a tool the agent
does not have) raises `AgentDefinitionError` when the module is imported, naming the setting.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    InstanceOf,
    JsonValue,
    PrivateAttr,
    SkipValidation,
    ValidationError,
    field_validator,
    model_validator,
)

from ..context.policy import ContextPolicy
from ..errors import StepLineError
from ..llm.base import LanguageModel, ToolChoice
from ..loop.approval import approval_rule
from ..loop.callbacks import Callback, Callbacks
from ..loop.config import Include, Instructions, LoopConfig, PrepareStep, RepairToolCall, Timeouts
from ..loop.limits import Limits, LimitsError
from ..loop.prices import PriceTable, PriceTableError
from ..loop.stop import StopCondition
from ..loop.tools import ApprovalPolicy, ApprovalSetting, Tool
from ..protocol.model_messages import ProviderOptions, SystemModelMessage
from ..protocol.to_model_messages import ReasoningPolicy
from .delegation import AgentTool, ResultKind, agent_tool
from .fingerprint import digest
from .loop_options import options_for
from .toolsets import agent_tools
from .unattended import Hook, Schedule, unique_names

__all__ = [
    "DEFAULT_MAX_STEPS",
    "Agent",
    "AgentDefinitionError",
    "DynamicInstructions",
    "ModelResolver",
    "NewMessagePolicy",
]

DEFAULT_MAX_STEPS = 25
"""Model steps a run takes at most when the agent sets no `stop_when` (`STEPLINE_MAX_STEPS`)."""

DynamicInstructions = Callable[[Any], "Instructions | None | Awaitable[Instructions | None]"]
"""`(run_context) -> instructions`: called before every step with the run's fixed context."""
ModelResolver = Callable[[str, float | None], LanguageModel]
"""`(spec, request_timeout) -> model`: how a host turns `provider:model-id` into a model (its keys)."""

NewMessagePolicy = Literal["reject", "queue", "interrupt", "steer"]
"""What a new user message does while a run of the conversation works (docs/api.md, "A new message
while a run works"); a request may choose another with the body field `onNewMessage`."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class AgentDefinitionError(StepLineError, ValueError):
    """An agent that cannot run as defined; the message names the agent and the setting."""


class Agent(BaseModel):
    """An agent: its model, instructions, tools and every `stream_text` setting of a durable run.

    Attributes:
        name: Names the agent in a deployment with several (`[A-Za-z0-9_.-]`, up to 64).
        description: Shown in `GET /api/agents` and the web UI's agent picker.
        model: `"provider:model-id"` or a `LanguageModel`; None uses the runtime's configured model
            (`STEPLINE_MODEL`, else the scripted demo book).
        instructions: A string, one system message (with provider options), a list of system
            blocks (the Anthropic cache-breakpoint case), or a function of the run context
            returning one of those (sync or async).
        tools: The agent's tools (`@tool` functions, `tool(...)` definitions, toolsets).
        tool_approval: Per tool name a setting or a policy, or one policy for every tool; a
            tool's own `@tool(approval=...)` applies where this names nothing for it.
        context: How the context stays within the model's window (`ContextPolicy`): the next
            turn's history by tokens, and compaction steps when a call would exceed its threshold.
        reasoning_history: What happens to earlier reasoning parts on the next turn.
        tracer: An OpenTelemetry tracer: spans per step, model call and tool (on the durable path
            the runtime's tracer is used when this is None).
        meter: An OpenTelemetry meter: the GenAI client metrics (token usage, call duration).
        trace_content: Spans carry the prompt, the answer and tool arguments and results (masked).
        on_new_message: What a user message sent while a run works does: `queue` (the default: it
            is answered by a new run when the current one ends, nothing cut, nothing lost),
            `reject` (a 409), `interrupt` (the run stops at its next safe point, then the message
            is answered) or `steer` (the running loop reads it at its next step boundary).
        prices: Prices per `provider:model-id` (USD per million tokens, as in a deployment's price
            file) that replace or add to the deployment's table for this agent's runs.
        limits: `Limits` (or a mapping of them) over the deployment's: per run, user and tenant.

    The other fields are the `stream_text` settings of the same names (`tool_choice`,
    `active_tools`, `tool_order`, `stop_when`, `prepare_step`, `repair_tool_call`, the sampling
    settings, `max_retries`, `timeouts`, `headers`, `provider_options`, `output`, `output_schema`,
    `include`) and its lifecycle callbacks (`on_start` … `on_abort`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    name: str = "agent"
    description: str | None = None
    model: Any = None
    instructions: Any = None
    tools: SkipValidation[Sequence[Tool]] = ()
    """Checked by `_valid_tools` (`agent_tools`): a list of tools becomes a tuple; a toolset (an MCP
    toolset, whose tools are listed when a step first needs them), alone or in the list, stays live."""
    tool_approval: SkipValidation[Mapping[str, ApprovalSetting | ApprovalPolicy] | ApprovalPolicy | None] = None
    tool_choice: ToolChoice | None = None
    active_tools: tuple[str, ...] | None = None
    tool_order: tuple[str, ...] | None = None
    stop_when: StopCondition | Sequence[StopCondition] | None = None
    prepare_step: PrepareStep | None = None
    repair_tool_call: RepairToolCall | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop_sequences: tuple[str, ...] | None = None
    seed: int | None = None
    reasoning: str | None = None
    max_retries: int = Field(default=2, ge=0)
    timeouts: InstanceOf[Timeouts] = Field(default_factory=Timeouts)
    headers: Mapping[str, str] = Field(default_factory=dict[str, str])
    provider_options: ProviderOptions = Field(default_factory=dict[str, dict[str, JsonValue]])
    output: type[BaseModel] | None = None
    output_schema: dict[str, JsonValue] | None = None
    include: InstanceOf[Include] = Field(default_factory=Include)
    context: InstanceOf[ContextPolicy] = Field(default_factory=ContextPolicy)
    reasoning_history: ReasoningPolicy = "auto"
    on_start: Callback | None = None
    on_step_start: Callback | None = None
    on_language_model_call_start: Callback | None = None
    on_chunk: Callback | None = None
    on_language_model_call_end: Callback | None = None
    on_tool_execution_start: Callback | None = None
    on_tool_execution_end: Callback | None = None
    on_step_end: Callback | None = None
    on_end: Callback | None = None
    on_error: Callback | None = None
    on_abort: Callback | None = None
    tracer: Any = None
    meter: Any = None
    trace_content: bool = False
    prices: SkipValidation[PriceTable | None] = None
    """Checked by `_valid_prices`: a mapping in the price file's form becomes a `PriceTable`."""
    limits: SkipValidation[Limits | None] = None
    schedules: tuple[Schedule, ...] = ()
    """Runs on a timetable (`stepline.agent.unattended`), each a conversation of its owner."""
    hooks: tuple[Hook, ...] = ()
    """Signed inbound webhooks, each payload mapped to a run (`POST /api/hooks/{agent}/{hook}`)."""
    on_new_message: NewMessagePolicy = "queue"

    _fingerprint: str | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            name = data.get("name", "agent")
            problems = "; ".join(_problem(issue) for issue in error.errors())
            raise AgentDefinitionError(f"agent {name}: {problems}") from None

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("use 1-64 characters from A-Z a-z 0-9 _ . -, starting with a letter or digit")
        return value

    @field_validator("model")
    @classmethod
    def _valid_model(cls, value: Any) -> Any:
        if value is None or isinstance(value, str) and ":" in value:
            return value
        if all(hasattr(value, a) for a in ("provider", "model_id", "stream")):
            return value
        raise ValueError("must be 'provider:model-id' (such as openai:gpt-5.1) or a LanguageModel")

    @model_validator(mode="before")
    @classmethod
    def _valid_tools(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        settings = cast(dict[str, Any], data)
        settings["tools"] = agent_tools(settings.get("tools", ()))
        approval: Any = settings.get("tool_approval")
        if not (approval is None or callable(approval) or isinstance(approval, Mapping)):
            raise ValueError("tool_approval: expected a mapping of tool names, or a policy function")
        return settings

    @field_validator("prices", mode="before")
    @classmethod
    def _valid_prices(cls, value: Any) -> Any:
        if value is None:
            return None
        try:
            return PriceTable.parse(value, source="prices")
        except PriceTableError as error:
            raise ValueError(str(error).removeprefix("prices: ")) from None

    @field_validator("limits", mode="before")
    @classmethod
    def _valid_limits(cls, value: Any) -> Any:
        try:
            return None if value is None else Limits.parse(value, source="limits")
        except LimitsError as error:
            raise ValueError(str(error).removeprefix("limits: ")) from None

    @field_validator("instructions")
    @classmethod
    def _valid_instructions(cls, value: Any) -> Any:
        if value is None or isinstance(value, str | SystemModelMessage) or callable(value):
            return value
        if isinstance(value, Sequence) and all(isinstance(v, SystemModelMessage) for v in cast(Sequence[Any], value)):
            return tuple(cast(Sequence[SystemModelMessage], value))
        raise ValueError("must be a string, a SystemModelMessage, a list of them, or a function of the run context")

    def model_post_init(self, context: Any, /) -> None:
        unique_names("schedules", [s.name for s in self.schedules])
        unique_names("hooks", [h.name for h in self.hooks])
        if not isinstance(self.tools, tuple):
            return  # a live toolset: its names are known once it is listed (the loop checks them per step)
        names = [t.name for t in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"tools: two tools are named {', '.join(duplicates)}")
        known = set(names)
        named: list[tuple[str, Sequence[str]]] = [
            ("active_tools", self.active_tools or ()),
            ("tool_order", self.tool_order or ()),
        ]
        approval: Any = self.tool_approval
        if isinstance(approval, Mapping):
            named.append(("tool_approval", [str(k) for k in cast(Mapping[Any, Any], approval)]))
        for setting, listed in named:
            unknown = sorted(set(listed) - known)
            if unknown:
                raise ValueError(
                    f"{setting}: no tool named {', '.join(unknown)} (its tools: {', '.join(sorted(known)) or 'none'})"
                )

    # -- what a run uses -----------------------------------------------------------------------------

    def language_model(self, resolve: ModelResolver, default: str) -> LanguageModel:
        """The model (`default` is the host's spec when `model` is None); hosts cache it per process."""
        spec = self.model if self.model is not None else default
        return resolve(spec, self.timeouts.request) if isinstance(spec, str) else cast(LanguageModel, spec)

    def model_spec(self, default: str) -> str:
        """`provider:model-id` of the model, for listings and the fingerprint."""
        if self.model is None:
            return default
        if isinstance(self.model, str):
            return self.model
        model = cast(LanguageModel, self.model)
        return f"{model.provider}:{model.model_id}"

    async def instructions_for(self, context: Any) -> Instructions | None:
        """The instructions of a step: the static value, or the function's for the run context."""
        value = self.instructions
        if callable(value):
            value = value(context)
            if inspect.isawaitable(value):
                value = await value
        return cast("Instructions | None", value)

    def approval_of(self, tool_name: str) -> Literal["required", "per-call", "none"]:
        """Whether a call of the tool waits for a person: always, as a policy decides, or never."""
        tool = next((t for t in self.tools if t.name == tool_name), None)
        setting: Any = approval_rule(self.tool_approval, tool, tool_name)  # the order the loop applies
        if callable(setting):
            return "per-call"
        status: Any = cast(tuple[Any, ...], setting)[0] if isinstance(setting, tuple) else setting
        return "required" if status == "user-approval" else "none"

    def callbacks(self) -> Callbacks:
        return Callbacks(**{name: getattr(self, name) for name in _CALLBACKS})

    async def loop_config(
        self, *, model: LanguageModel, context: Any, max_steps: int = DEFAULT_MAX_STEPS, **host: Any
    ) -> LoopConfig:
        """The `LoopConfig` of one step of a run with this run context.

        `host` adds the runtime's own fields (the tool guard, the abort signal, the approval secret,
        the clock, the deployment's `prices`, which this agent's own prices amend).
        """
        return LoopConfig(**await self.loop_options(model=model, context=context, max_steps=max_steps, **host))

    async def loop_options(
        self, *, model: LanguageModel, context: Any, max_steps: int = DEFAULT_MAX_STEPS, **host: Any
    ) -> dict[str, Any]:
        """`loop_config`'s fields as keyword arguments of `stream_text` (what `stepline run` runs)."""
        return await options_for(self, model=model, context=context, max_steps=max_steps, **host)

    def as_tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        input: type[BaseModel] | None = None,
        result: ResultKind = "text",
        **limits: int,
    ) -> AgentTool:
        """This agent as another agent's tool: each call a durable child run (`stepline.agent.delegation`)."""
        try:
            return agent_tool(self, name=name, description=description, input=input, result=result, **limits)
        except (ValueError, TypeError) as error:
            raise AgentDefinitionError(f"agent {self.name}: as_tool: {error}") from None

    def renamed(self, name: str) -> Agent:
        """The same agent under another name (a mapping's key), with its own fingerprint."""
        return Agent(**{**{k: getattr(self, k) for k in type(self).model_fields}, "name": name})

    def fingerprint(self) -> str:
        """A digest of the definition (settings, tool schemas, callables by qualified name).

        A run records it at its start; a run that continues under another fingerprint (a redeploy
        while it waited) is logged, and continues with the definition it finds.
        """
        if self._fingerprint is None:
            settings = {key: getattr(self, key) for key in type(self).model_fields}
            for added in ("prices", "limits"):  # settings added later: unset, they leave earlier fingerprints alone
                if settings[added] is None:
                    del settings[added]
            self._fingerprint = digest(settings, self.tools, self.model_spec("<runtime default>"))
        return self._fingerprint


_CALLBACKS = tuple(f.name for f in dataclasses.fields(Callbacks) if f.name != "extra")
"""The lifecycle callbacks an agent holds: `Callbacks`' own fields (one list, the loop's)."""


def _problem(issue: Any) -> str:
    where = ".".join(str(p) for p in issue["loc"])
    message = str(issue["msg"])
    if issue["type"] == "extra_forbidden":
        message = "not a setting of Agent"
    elif issue["type"] == "value_error":
        message = str(issue.get("ctx", {}).get("error", message))
    return f"{where}: {message}" if where else message


def _rebuild() -> None:
    """Resolve the forward references of the loop's callable types (their modules import lazily)."""
    from ..loop.config import PrepareStepResult
    from ..loop.state import StepRecord

    Agent.model_rebuild(
        _types_namespace={
            "StepRecord": StepRecord,
            "PrepareStepResult": PrepareStepResult,
            "ApprovalSetting": ApprovalSetting,
        }
    )


_rebuild()
