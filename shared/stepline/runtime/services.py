"""The composition root: what a process needs to run turns, built once (per Lambda cold start).

Pure: it holds ports (store, orchestrator, model) and values; `stepline.aws.wiring` and
`stepline.local` build the concrete ones. The agents come from the deployment's `STEPLINE_AGENT`
(`stepline.agent.loading`); `model`, `tools`, `tool_approval` and `instructions` are a shortcut
that builds the one default agent (what tests and the toolset variables use).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..agent.definition import Agent, ModelResolver
from ..agent.delegation import delegates_of
from ..agent.loading import AgentSet
from ..llm.base import LanguageModel
from ..llm.registry import DEMO_BOOK, resolve_with_timeout
from ..loop.config import LoopConfig
from ..loop.limits import Limits
from ..loop.price_list import DEFAULT_PRICES
from ..loop.prices import PriceTable
from ..loop.tools import ApprovalSetting, Tool
from ..store.blobs import BlobStore
from ..store.event_batcher import DEFAULT_WINDOW, UNATTENDED_WINDOW
from ..store.ports import Store
from ..tools.context import RunContext
from .approval_links import ApprovalLinks
from .budget_gate import CounterGate, tenant_of
from .deliveries import DeliveryLog
from .generated_files import ArtifactFiles
from .guard import StoreToolGuard
from .notifications import NoNotifier, Notifier
from .run_tree import RunTree
from .slot_waits import SlotWaits
from .stream_push import RunNotifier
from .watchers import Watchers

if TYPE_CHECKING:
    from ..tracing.run_telemetry import RunTelemetry

__all__ = ["DEFAULT_MODEL", "Orchestrator", "Services"]

DEFAULT_MODEL = f"scripted:{DEMO_BOOK}"
"""The runtime's model when `STEPLINE_MODEL` is unset: the scripted demo book (no key, no network)."""
_LOG = logging.getLogger("stepline.runtime")


class Orchestrator(Protocol):
    """The workflow engine that sequences a run's steps (Step Functions)."""

    def start_run(self, user_id: str, run_id: str) -> None:
        """Start the run's execution; a duplicated start is harmless (the execution is named by run id)."""
        ...

    def stop_run(self, user_id: str, run_id: str) -> None:
        """Stop the run's execution (abort)."""
        ...

    def resume(self, task_token: str) -> bool:
        """Complete a waiting task; False when it was already resumed or has expired."""
        ...


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(kw_only=True)
class Services:
    """Everything the worker functions need."""

    store: Store
    agents: AgentSet | None = None
    """The deployment's agents; None builds one default agent from the shortcut fields below."""
    model: LanguageModel | None = None
    """Shortcut: the default agent's model (a built model, used as it is)."""
    tools: Sequence[Tool] = ()
    tool_approval: Mapping[str, ApprovalSetting] | None = None
    instructions: str | None = None
    default_model: str = DEFAULT_MODEL
    """`provider:model-id` of an agent that names no model (`STEPLINE_MODEL`)."""
    resolve: ModelResolver = resolve_with_timeout
    """How a model spec becomes a model in this process (the AWS wiring adds keys from SSM)."""
    blobs: BlobStore | None = None
    """Workspace files and artifacts, for the tools (`RunContext.blobs`); None when there is no bucket."""
    orchestrator: Orchestrator | None = None
    approval_timeout_ms: int = 24 * 3600 * 1000
    max_steps: int = 25
    """Model steps of a run whose agent sets no `stop_when` (`STEPLINE_MAX_STEPS`)."""
    steps_per_execution: int = 400
    """Model steps one execution runs before it continues as a new one (the 25,000-event history
    limit: a step with a wait, an expiry and retries is under 40 events, so 400 leave room)."""
    max_retries: int = 2
    """The default agent's retries inside a step (safe boundary only)."""
    approval_secret: bytes | None = None
    approval_links: ApprovalLinks | None = None
    """Signs and checks approval links (`stepline.runtime.approval_links`); None: links are off."""
    notifier: Notifier = field(default_factory=NoNotifier)
    """Where run lifecycle events go (`stepline.runtime.notifications`; EventBridge on AWS)."""
    deliveries: DeliveryLog | None = None
    """Where callback deliveries and their attempts are recorded (`GET /api/runs/{id}` reads them)."""
    delta_window: float = DEFAULT_WINDOW
    """How long a delta is held at most for the next batch, in a run started from a chat."""
    unattended_delta_window: float = UNATTENDED_WINDOW
    """The same in a run no chat started (`trigger="automation"`: POST /api/runs, a schedule, a
    webhook); someone who follows one anyway sees its text a batch per window."""
    watchers: Watchers | None = None
    """Where streams note the runs they follow (`stepline.runtime.watchers`); a chat's run that nobody
    follows then writes its deltas at the unattended window. None: a chat's run always has the chat's."""
    stream_push: RunNotifier | None = None
    """Tells the streams following a run that its log has grown (None: they only poll)."""
    client: str | None = None
    telemetry: RunTelemetry | None = None
    """This process's tracer and meter (`stepline.tracing.setup`); None: tracing is off."""
    prices: PriceTable = DEFAULT_PRICES
    """The deployment's price table (`STEPLINE_PRICES` amends the shipped one); agents amend it again."""
    limits: Limits | None = None
    """The deployment's limits (`STEPLINE_LIMITS`); an agent's own take precedence, setting by setting."""
    tenant_claim: str | None = None
    """The identity claim naming a caller's tenant (`STEPLINE_TENANT_CLAIM`); None: one tenant."""
    admin_claim: str | None = None
    """The claim of an admin, who may approve user and tenant budget requests (`STEPLINE_ADMIN_CLAIM`)."""
    inspect: bool = True
    """Step records keep each model request as sent and its timings, for the run inspector."""
    clock: Callable[[], int] = field(default=_now_ms)
    slot_waits: SlotWaits = field(default_factory=SlotWaits)
    """The requests of this process waiting for a working-run slot (`stepline.runtime.slot_waits`)."""
    agent_set: AgentSet = field(init=False)
    _models: dict[str, LanguageModel] = field(init=False, default_factory=dict[str, LanguageModel])

    def __post_init__(self) -> None:
        if self.agents is not None:
            self.agent_set = self.agents
            return
        agent = Agent(
            name="default",
            model=self.model,
            tools=list(self.tools),
            tool_approval=dict(self.tool_approval) if self.tool_approval else None,
            instructions=self.instructions,
            max_retries=self.max_retries,
        )
        self.agent_set = AgentSet.single(agent)

    def counts_tenants(self) -> bool:
        """Whether the deployment has a tenant limit: in its own limits or any agent's, sub-agents included.

        Only then do calls count on their tenant's counters (`runtime.budget_gate`).
        """
        agents = [*self.agent_set.agents.values(), *delegates_of(self.agent_set.agents.values()).values()]
        return any(limits is not None and limits.tenant for limits in [self.limits, *(a.limits for a in agents)])

    def agent(self, name: str | None) -> Agent:
        """The agent called `name` (None: the default); `UnknownAgentError` when there is none."""
        return self.agent_set.get(name)

    def agent_of_run(self, name: str | None, fingerprint: str | None = None) -> Agent:
        """The agent a stored run names.

        Redeployed without it, the default agent goes on with the run (a run is never stuck on a
        missing definition); a changed definition is logged.
        """
        try:
            agent = self.agent_set.get(name)
        except KeyError:
            _LOG.warning("agent %s of a run is no longer deployed; the default agent continues it", name)
            return self.agent_set.default
        if fingerprint and fingerprint != agent.fingerprint():
            _LOG.info("agent %s changed since the run started (%s -> %s)", name, fingerprint, agent.fingerprint())
        return agent

    def model_for(self, agent: Agent) -> LanguageModel:
        """The agent's model, built once per process."""
        model = self._models.get(agent.name)
        if model is None:
            model = agent.language_model(self.resolve, self.default_model)
            self._models[agent.name] = model
        return model

    def model_spec(self, agent: Agent) -> str:
        model = self.model_for(agent)
        return f"{model.provider}:{model.model_id}"

    async def step_config(
        self,
        agent: Agent,
        *,
        user_id: str,
        run_id: str,
        claim_token: str,
        context: Any,
        tree: RunTree | None = None,
        **overrides: Any,
    ) -> LoopConfig:
        """The loop configuration of one step of a run.

        With the store-backed tool guard, generated files kept as artifacts when the run has a
        `RunContext`, and the budgets of its user, tenant and `tree` (`stepline.runtime.run_tree`).
        """
        guard = StoreToolGuard(self.store, user_id=user_id, run_id=run_id, claim_token=claim_token, now=self.clock)
        files = ArtifactFiles(context) if isinstance(context, RunContext) else None
        traced = self.telemetry.loop_options() if self.telemetry is not None and agent.tracer is None else {}
        claims = context.claims if isinstance(context, RunContext) else None
        tenant = tenant_of(claims, self.tenant_claim)
        gate = CounterGate(
            self.store.counters, user_id, tenant, agent.name, self.clock, tree, count_tenant=self.counts_tenants()
        )
        return await agent.loop_config(
            **traced,
            inspect=self.inspect,
            model=self.model_for(agent),
            context=context,
            max_steps=self.max_steps,
            approval_secret=self.approval_secret,
            tool_guard=guard,
            generated_files=files,
            prices=self.prices,
            limits=self.limits,
            budget_gate=gate,
            budget_requests=True,
            clock=self.clock,
            **overrides,
        )
