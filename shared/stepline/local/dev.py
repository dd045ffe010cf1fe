"""`stepline dev`: the whole of Stepline on this machine, one command, no AWS account.

The same FastAPI app as on AWS, served by uvicorn, over the local backend (`stepline.local.backend`:
the state machine of template.yaml run by `stepline.local.engine`, the worker functions in process,
where a run that waits for a person holds no thread). The
state is kept in a data folder (`--data DIR`, default `.stepline/` in the working directory: the
store in SQLite, the files beside it), so conversations, runs and waiting approvals survive a
restart and every unfinished run is driven again on start; `--memory` keeps everything in moto's
memory instead (DynamoDB and S3 of template.yaml), gone when the server stops.

SIGTERM or Ctrl-C ends the open streams at once, without `[DONE]` (clients resume them with
`Last-Event-ID` after the restart), and the process exits within a few seconds; a step cut by the
stop is redone on the next start.

Configuration is read from the environment:

    STEPLINE_AGENT       package.module:attribute, an `Agent` or a mapping of them (default: the
                         default agent: STEPLINE_MODEL with the tools of STEPLINE_TOOLS); the
                         working directory is importable, so `agent:agent` finds ./agent.py
    STEPLINE_MODEL       openai:<model> | anthropic:<model> | scripted:<file.json>, for agents that
                         name no model (default: the scripted demo book; the providers' own
                         variables, such as OPENAI_API_KEY and ANTHROPIC_API_KEY, give the keys)
    STEPLINE_TOOLS       the default agent's tools: a module exposing TOOLS (default: stepline.tools.workspace;
                         stepline.tools.mcp: the MCP servers of STEPLINE_MCP_SERVERS, docs/tools.md)
    STEPLINE_DEV_TOKENS  token:user,token2:user2 (default: one local user, no token needed)
    STEPLINE_OIDC_ISSUER, STEPLINE_OIDC_CLIENT_ID   sign in with a real OIDC provider instead: bearer
                         tokens are its ID tokens, checked against its keys; /config.json tells the UI
    STEPLINE_OIDC_LEEWAY_SECONDS  how far the issuer's clock may be from this one (default: 30, 0 to 300)
    STEPLINE_APPROVAL_TIMEOUT_SECONDS   how long an approval or question waits (default: 1 day)
    STEPLINE_CORS_ORIGINS  other browser origins that may call the API, comma-separated, such as
                         http://localhost:3000 for a front end of your own (default: none)

`--aws` serves the API over a deployed stack instead (its tables, bucket and state machine, named
by the same `STEPLINE_*` variables the Lambda functions read; see infra/README.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import AsyncGenerator, Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anyio import to_thread
from fastapi.responses import JSONResponse

from ..agent.loading import AgentLoadError, AgentSet, agents_from_env, check_keys
from ..api.app import create_app
from ..api.cors import parse_origins
from ..api.deps import ApiOptions
from ..api.identity import DevTokens, Identity, parse_dev_tokens
from ..api.oidc import DEFAULT_LEEWAY_SECONDS, JwtIdentity
from ..errors import StepLineError
from ..llm.registry import DEMO_BOOK, resolve_with_timeout
from ..runtime.approval_links import ApprovalLinks
from ..runtime.deployment_budget import DeploymentBudget, budget_from_env
from ..runtime.hook_signatures import EnvHookSecrets
from ..runtime.services import Services
from ..runtime.watchers import MemoryWatchers
from ..store.event_batcher import DEFAULT_WINDOW, UNATTENDED_WINDOW
from ..tracing.setup import telemetry_from_env
from .backend import Engine, LocalBackend, local_backend
from .link_key import link_key
from .links import LocalLinkBlobStore, mount_links
from .restart import Sweeper
from .ui_build import default_dist
from .unattended import DevUnattended
from .web import describe, mount_web

__all__ = [
    "API_THREADS",
    "LOCAL_DELTA_WINDOW",
    "DevConfig",
    "DevConfigError",
    "DevServer",
    "banner",
    "dev_server",
    "ui_config",
]

DEFAULT_TOOLS = "stepline.tools.workspace"
API_THREADS = 16
"""Threads the API lends to blocking work at once: the sync routes and the streams' store reads
(anyio's default limiter, 40 otherwise). With the engine's `STEP_WORKERS`, this bounds the server's
threads whatever the number of open streams and waiting runs."""
LOCAL_DELTA_WINDOW = 0.010
"""The delta window over a data folder (SQLite), instead of AWS's 100 ms.

On AWS the window bounds the event log's write units (money); a SQLite commit costs well under a
millisecond of this machine (WAL, `synchronous=NORMAL`: no fsync per commit), so a delta is held
10 ms at most (5 on average) and a fast model makes at most ~100 appends a second. The batcher
still widens the window to four times an append's duration when appends slow down (a loaded
machine), and writes every part's first delta at once either way. `--memory` keeps AWS's window:
moto's DynamoDB is the stand-in for DynamoDB's costs."""


class DevConfigError(StepLineError):
    """A Stepline variable of the environment is not usable."""


@dataclass(frozen=True, slots=True)
class DevConfig:
    """What the dev server runs, from the environment."""

    model: str
    model_is_demo: bool
    tools: str
    agent: str
    """`STEPLINE_AGENT` (empty: the default agent)."""
    tokens: dict[str, str]
    approval_timeout_seconds: int
    cors_origins: tuple[str, ...] = ()
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_leeway_seconds: int = DEFAULT_LEEWAY_SECONDS
    budget: DeploymentBudget = DeploymentBudget()
    """`STEPLINE_PRICES`, `STEPLINE_LIMITS`, `STEPLINE_TENANT_CLAIM`."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DevConfig:
        model = env.get("STEPLINE_MODEL", "").strip()
        try:
            tokens = parse_dev_tokens(env.get("STEPLINE_DEV_TOKENS", ""))
        except ValueError as error:
            raise DevConfigError(str(error)) from None
        try:
            origins = parse_origins(env.get("STEPLINE_CORS_ORIGINS", ""))
        except ValueError as error:
            raise DevConfigError(f"STEPLINE_CORS_ORIGINS: {error}") from None
        timeout = env.get("STEPLINE_APPROVAL_TIMEOUT_SECONDS", "86400")
        if not timeout.isdigit() or int(timeout) < 1:
            raise DevConfigError("STEPLINE_APPROVAL_TIMEOUT_SECONDS must be a whole number of seconds >= 1")
        try:
            budget = budget_from_env(env)
        except StepLineError as error:
            raise DevConfigError(str(error)) from None
        return cls(
            model=model or f"scripted:{DEMO_BOOK}",
            model_is_demo=not model,
            tools=env.get("STEPLINE_TOOLS", "").strip() or DEFAULT_TOOLS,
            agent=env.get("STEPLINE_AGENT", "").strip(),
            tokens=tokens,
            approval_timeout_seconds=int(timeout),
            cors_origins=origins,
            budget=budget,
            **_oidc(env),
        )


def _oidc(env: Mapping[str, str]) -> dict[str, Any]:
    issuer, client = env.get("STEPLINE_OIDC_ISSUER", "").strip(), env.get("STEPLINE_OIDC_CLIENT_ID", "").strip()
    if bool(issuer) != bool(client):
        raise DevConfigError("STEPLINE_OIDC_ISSUER and STEPLINE_OIDC_CLIENT_ID go together")
    if issuer and not issuer.startswith(("https://", "http://127.0.0.1", "http://localhost")):
        raise DevConfigError("STEPLINE_OIDC_ISSUER must be an https:// URL (or a local http:// one)")
    leeway = env.get("STEPLINE_OIDC_LEEWAY_SECONDS", str(DEFAULT_LEEWAY_SECONDS)).strip()
    if not (leeway.isascii() and leeway.isdigit() and int(leeway) <= 300):
        raise DevConfigError("STEPLINE_OIDC_LEEWAY_SECONDS must be a whole number of seconds from 0 to 300")
    return {"oidc_issuer": issuer, "oidc_client_id": client, "oidc_leeway_seconds": int(leeway)} if issuer else {}


def ui_config(config: DevConfig) -> dict[str, Any]:
    """`/config.json`: what the UI reads at start (template.yaml's UiContent writes the deployed one)."""
    auth = None
    if config.oidc_issuer:
        auth = {"authority": config.oidc_issuer, "clientId": config.oidc_client_id, "scope": "openid email profile"}
    return {"apiBase": "", "auth": auth}


@dataclass
class DevServer:
    """A built dev server: the app, its backend and who its users are."""

    app: Any
    backend: LocalBackend
    identity: Identity
    config: DevConfig
    unattended: DevUnattended


@contextmanager
def dev_server(
    config: DevConfig,
    *,
    api: ApiOptions = ApiOptions(),  # noqa: B008 - frozen
    data_dir: Path | None = None,
    engine: Engine = "local",
) -> Generator[DevServer]:
    """The app over the local backend (moto lives for the duration of the context).

    `data_dir` keeps the state in that folder (and drives its unfinished runs again); None: in memory.
    `engine` runs the state machine: Stepline's own (`stepline.local.engine`: a waiting run holds no
    thread), or moto's interpreter (for a test that reads the execution history).
    """
    agents = dev_agents(config)
    # STEPLINE_TRACING=otlp (with the standard OTEL_EXPORTER_OTLP_* variables) sends each run's
    # trace to a local collector or Jaeger; off by default. The inspector needs none of it.
    telemetry = telemetry_from_env(os.environ, service="stepline-dev")
    try:
        unattended = DevUnattended.from_env(os.environ, data_dir)
    except ValueError as error:
        raise DevConfigError(str(error)) from None

    def make_services(**backend: Any) -> Services:
        return Services(
            agents=agents,
            telemetry=telemetry,
            default_model=config.model,
            prices=config.budget.prices,
            limits=config.budget.limits,
            tenant_claim=config.budget.tenant_claim,
            admin_claim=config.budget.admin_claim,
            client="stepline-dev",
            # Approval links work locally too: over a data folder with the folder's key (a link
            # outlives a restart, as its approval does), in memory with a key of this process.
            approval_links=ApprovalLinks(link_key(data_dir)),
            notifier=unattended.notifier,
            deliveries=unattended.outbox,
            delta_window=DEFAULT_WINDOW if data_dir is None else LOCAL_DELTA_WINDOW,
            unattended_delta_window=UNATTENDED_WINDOW if data_dir is None else LOCAL_DELTA_WINDOW,
            watchers=MemoryWatchers(),  # one process: every stream and step of this server
            **backend,
        )

    with local_backend(
        make_services, approval_timeout_seconds=config.approval_timeout_seconds, data_dir=data_dir, engine=engine
    ) as backend:
        assert backend.orchestrator is not None
        sweeper = Sweeper(backend.services, backend.orchestrator).start()  # AWS runs it on a schedule
        identity: Identity = (
            JwtIdentity(config.oidc_issuer, config.oidc_client_id, leeway_seconds=config.oidc_leeway_seconds)
            if config.oidc_issuer and config.oidc_client_id
            else DevTokens(config.tokens)
        )
        options = dataclasses.replace(
            api,
            cors_origins=config.cors_origins,
            callbacks=unattended.policy if unattended.callbacks_on else None,
            hook_secrets=EnvHookSecrets(),
        )
        app = create_app(backend.services, identity, options)
        unattended.install(app, backend.services)
        _bound_threads(app)
        settings = ui_config(config)
        app.add_api_route("/config.json", lambda: JSONResponse(settings, headers={"cache-control": "no-store"}))
        blobs = backend.services.blobs
        assert isinstance(blobs, LocalLinkBlobStore)
        mount_links(app, blobs)
        mount_web(app, default_dist(os.environ))
        try:
            yield DevServer(app, backend, identity, config, unattended)
        finally:
            unattended.stop()
            sweeper.stop()
            if telemetry is not None:
                telemetry.shutdown()  # exports what is still batched


def _bound_threads(app: Any) -> None:
    """Set the API's thread limit (`API_THREADS`) when the server starts: the limiter is its event loop's."""
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncGenerator[Any]:
        to_thread.current_default_thread_limiter().total_tokens = API_THREADS
        async with inner(app) as state:
            yield state

    app.router.lifespan_context = lifespan


def dev_agents(config: DevConfig) -> AgentSet:
    """The agents to serve, importable from the working directory.

    Fails before serving when one cannot be imported or its provider has no API key (the message
    names the variable).
    """
    env = {"STEPLINE_AGENT": config.agent, "STEPLINE_TOOLS": config.tools}
    try:
        agents = agents_from_env(env, search=Path.cwd())
        check_keys(agents, config.model, os.environ)
        for _, agent in agents:
            agent.language_model(_resolve_checked, config.model)
    except AgentLoadError as error:
        raise DevConfigError(str(error)) from None
    return agents


def _resolve_checked(spec: str, timeout: float | None) -> Any:
    try:
        return resolve_with_timeout(spec, timeout)
    except StepLineError as error:
        raise AgentLoadError(f"STEPLINE_MODEL={spec}: {error}") from None


def banner(server: DevServer, url: str) -> str:
    """What the dev server prints when it is up: where, which model, what storage, how to change them."""
    config = server.config
    model = (
        "scripted demo book (no API key needed; it follows a script, it does not think)"
        if config.model_is_demo
        else config.model
    )
    lines = [
        f"Stepline is running at {url}  (API docs: {url}/api/docs)",
        *_agent_lines(server.backend.services, config),
        f"  model    {model}{'  (for agents that name none)' if config.agent else ''}",
        "           change it: STEPLINE_MODEL=openai:<model> (OPENAI_API_KEY) or anthropic:<model> (ANTHROPIC_API_KEY)",
        *_storage(server),
        f"  users    {server.identity.describe()}",
        f"  origins  {_origins(config.cors_origins)}",
        f"  web UI   {describe(default_dist(os.environ))}",
        *server.unattended.describe(),
        "  stop     Ctrl-C",
    ]
    return "\n".join(lines) + "\n"


def _agent_lines(services: Services, config: DevConfig) -> list[str]:
    agents = services.agent_set
    source = config.agent or f"the default agent with the tools of {config.tools}"
    lines = [
        f"  agents   {source}  (STEPLINE_AGENT=package.module:attribute)" if config.agent else f"  agent    {source}"
    ]
    for name, agent in agents:
        marks = {"required": " (approval)", "per-call": " (approval per call)", "none": ""}
        tools = ", ".join(t.name + marks[agent.approval_of(t.name)] for t in agent.tools)
        lines.append(f"           {name}: {services.model_spec(agent)}; tools: {tools or 'none'}")
    return lines


def _storage(server: DevServer) -> list[str]:
    data_dir = server.backend.data_dir
    if data_dir is None:
        return [
            "  storage  in memory (--memory): DynamoDB and S3 on moto; everything is gone when the server stops",
            f"           {_engine(server)}; `stepline dev --aws` uses a deployed stack",
        ]
    redriven = server.backend.redriven
    again = f"; {redriven} unfinished run{'s' if redriven != 1 else ''} driven again" if redriven else ""
    return [
        f"  storage  {data_dir}  (kept across restarts: the store in stepline.db, files in blobs/{again})",
        f"           {_engine(server)}",
        "           start afresh: stop the server and delete the folder, or --data DIR; --memory keeps nothing",
    ]


def _engine(server: DevServer) -> str:
    if server.backend.workflow is not None:
        return "Step Functions: template.yaml's state machine on moto, in this process"
    return "Step Functions: template.yaml's state machine, run in this process (stepline.local.engine)"


def _origins(origins: tuple[str, ...]) -> str:
    if not origins:
        return "same origin only  (STEPLINE_CORS_ORIGINS=http://localhost:3000,... admits other front ends)"
    return f"same origin and {', '.join(origins)}  (STEPLINE_CORS_ORIGINS)"
