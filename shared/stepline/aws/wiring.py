"""Services built from a Lambda function's environment (the variables template.yaml sets).

Built once per process, on the first invocation (`services_from_env` is cached); a missing or
malformed variable fails that invocation with a message naming it, never a half-configured
function. Provider API keys are
read from SSM Parameter Store (SecureString) at cold start when their parameter name is set: only
the name is in the environment, and the key never reaches a log line.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import boto3
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..agent.loading import AgentLoadError, agents_from_env
from ..errors import StepLineError
from ..llm.base import LanguageModel
from ..llm.registry import deferred_model, resolve_model
from ..runtime.deployment_budget import budget_from_env
from ..runtime.handling import Handler, HandlerFactory
from ..runtime.notifications import NoNotifier, Notifier
from ..runtime.services import DEFAULT_MODEL, Services
from ..runtime.stream_push import RunNotifier
from .appsync_events import flush_notifications
from .dynamo_watchers import DynamoWatchers
from .dynamodb import DynamoStore
from .events import EventBridgeNotifier
from .s3 import S3BlobStore
from .secrets import approval_links_from_secret
from .stepfunctions import StepFunctionsOrchestrator

if TYPE_CHECKING:
    from ..tracing.run_telemetry import RunTelemetry

__all__ = [
    "ConfigurationError",
    "Settings",
    "build_services",
    "reconciler_handler",
    "services_from_env",
    "worker_handler",
]


class ConfigurationError(StepLineError):
    """The function's environment is missing or has a malformed Stepline variable."""


class Settings(BaseModel):
    """The Stepline variables of a function's environment."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    agent_table: str = Field(alias="STEPLINE_AGENT_TABLE", min_length=3)
    events_table: str = Field(alias="STEPLINE_EVENTS_TABLE", min_length=3)
    bucket: str = Field(alias="STEPLINE_BUCKET", min_length=3)
    agent: str = Field(alias="STEPLINE_AGENT", default="")
    """`package.module:attribute` of the deployment's agents (empty: the default agent)."""
    model: str = Field(alias="STEPLINE_MODEL", default=DEFAULT_MODEL, pattern=r"^[a-z]+:.+$")
    """The model of agents that name none."""
    tools: str = Field(alias="STEPLINE_TOOLS", default="stepline.tools.workspace")
    """The default agent's tools (when `agent` is empty)."""
    state_machine_arn: str | None = Field(alias="STEPLINE_STATE_MACHINE_ARN", default=None)
    approval_timeout_seconds: int = Field(alias="STEPLINE_APPROVAL_TIMEOUT_SECONDS", default=86400, ge=1)
    max_steps: int = Field(alias="STEPLINE_MAX_STEPS", default=25, ge=1, le=1000)
    event_retention_days: int = Field(alias="STEPLINE_EVENT_RETENTION_DAYS", default=7, ge=1)
    openai_key_parameter: str | None = Field(alias="STEPLINE_OPENAI_KEY_PARAMETER", default=None)
    anthropic_key_parameter: str | None = Field(alias="STEPLINE_ANTHROPIC_KEY_PARAMETER", default=None)
    cors_origins: str = Field(alias="STEPLINE_CORS_ORIGINS", default="")
    """Comma-separated browser origins that may call the API (read by `stepline.aws.api`)."""
    approval_link_secret: str | None = Field(alias="STEPLINE_APPROVAL_LINK_SECRET", default=None)
    """The Secrets Manager secret (ARN) whose value keys the approval links; unset: links are off."""
    event_bus: str | None = Field(alias="STEPLINE_EVENT_BUS", default=None)
    """The EventBridge bus of the run lifecycle events; unset: none are published."""
    events_http_domain: str | None = Field(alias="STEPLINE_EVENTS_HTTP_DOMAIN", default=None)
    """The AppSync Event API's HTTP domain (`Dns.Http`): the writer publishes "the run has more"
    there; unset (or without the real-time domain): no push, the streams poll."""
    events_realtime_domain: str | None = Field(alias="STEPLINE_EVENTS_REALTIME_DOMAIN", default=None)
    """The Event API's real-time domain (`Dns.Realtime`): the streams subscribe there."""
    region: str = Field(alias="AWS_REGION", default="us-east-1")
    tracing: str = Field(alias="STEPLINE_TRACING", default="off", pattern=r"^(off|xray|otlp)$")
    """Where the run's trace goes (`stepline.tracing.setup`): off, xray or otlp."""
    inspect: bool = Field(alias="STEPLINE_INSPECT", default=True)
    """Step records keep each model request as sent, for the run inspector."""
    snapstart: bool = Field(alias="STEPLINE_SNAPSTART", default=False)
    prices: str = Field(alias="STEPLINE_PRICES", default="")
    """The deployment's price file (a path in the function's package); empty: the shipped table."""
    limits: str = Field(alias="STEPLINE_LIMITS", default="")
    """The deployment's limits, a JSON object (`stepline.loop.limits`); empty: none."""
    tenant_claim: str = Field(alias="STEPLINE_TENANT_CLAIM", default="")
    admin_claim: str = Field(alias="STEPLINE_ADMIN_CLAIM", default="")
    """The function runs with Lambda SnapStart: prime its imports before the snapshot (`stepline.aws.snapstart`)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        present = {
            key: value
            for key, value in env.items()
            if (key.startswith("STEPLINE_") or key == "AWS_REGION") and value != ""
        }
        try:
            return cls.model_validate(present)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in issue['loc'])}: {issue['msg']}" for issue in error.errors()
            )
            raise ConfigurationError(f"Stepline environment is not usable: {problems}") from None


def _client(service: str) -> Any:
    return cast(Any, boto3.client(service))  # pyright: ignore[reportUnknownMemberType]


def _secret(ssm: Any, name: str) -> str:
    try:
        return str(ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"])
    except Exception as error:  # the key itself is never in the message
        code = getattr(error, "response", {}).get("Error", {}).get("Code", type(error).__name__)
        raise ConfigurationError(f"cannot read the API key parameter {name} from SSM ({code})") from None


def build_services(settings: Settings, *, client: Callable[[str], Any] = _client, model_now: bool = False) -> Services:
    """Concrete services for `settings` (`client(name)` makes the boto3 clients).

    The model's SDK is imported when the model is first called (`deferred_model`), unless
    `model_now`: the model step builds it at cold start, where a bad key or option fails at once.
    """
    try:
        budget = budget_from_env(
            {
                "STEPLINE_PRICES": settings.prices,
                "STEPLINE_LIMITS": settings.limits,
                "STEPLINE_TENANT_CLAIM": settings.tenant_claim,
                "STEPLINE_ADMIN_CLAIM": settings.admin_claim,
            }
        )
    except StepLineError as error:
        raise ConfigurationError(str(error)) from None
    blobs = S3BlobStore(settings.bucket, client_factory=lambda: client("s3"))
    dynamodb = client("dynamodb")
    store = DynamoStore(
        dynamodb,
        agent_table=settings.agent_table,
        events_table=settings.events_table,
        blobs=blobs,
        delta_retention_ms=settings.event_retention_days * 24 * 3600 * 1000,
    )
    ssm = functools.cache(lambda: client("ssm"))
    keys: dict[str, str] = {}

    def resolve(spec: str, timeout: float | None) -> LanguageModel:
        provider = spec.partition(":")[0]
        parameter = {"openai": settings.openai_key_parameter, "anthropic": settings.anthropic_key_parameter}.get(
            provider
        )
        options: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
        if parameter:  # read once per process, only for a provider an agent uses
            if parameter not in keys:
                keys[parameter] = _secret(ssm(), parameter)
            options["api_key"] = keys[parameter]
        return (resolve_model if model_now else deferred_model)(spec, **options)

    try:
        agents = agents_from_env({"STEPLINE_AGENT": settings.agent, "STEPLINE_TOOLS": settings.tools})
    except AgentLoadError as error:
        raise ConfigurationError(str(error)) from None
    orchestrator = (
        StepFunctionsOrchestrator(
            client("stepfunctions"),
            state_machine_arn=settings.state_machine_arn,
            approval_timeout_seconds=settings.approval_timeout_seconds,
        )
        if settings.state_machine_arn
        else None
    )
    links = (
        approval_links_from_secret(client("secretsmanager"), settings.approval_link_secret)
        if settings.approval_link_secret
        else None
    )
    notifier: Notifier = (
        EventBridgeNotifier(bus=settings.event_bus, client_factory=lambda: client("events"))
        if settings.event_bus
        else NoNotifier()
    )
    services = Services(
        prices=budget.prices,
        limits=budget.limits,
        tenant_claim=budget.tenant_claim,
        admin_claim=budget.admin_claim,
        telemetry=_telemetry(settings),
        inspect=settings.inspect,
        stream_push=_stream_push(settings),
        watchers=DynamoWatchers(dynamodb, settings.agent_table),
        store=store,
        blobs=blobs,
        agents=agents,
        default_model=settings.model,
        resolve=resolve,
        orchestrator=orchestrator,
        approval_timeout_ms=settings.approval_timeout_seconds * 1000,
        max_steps=settings.max_steps,
        approval_links=links,
        notifier=notifier,
    )
    for _, agent in agents:  # at cold start: a malformed spec, an unknown provider (and in the model
        services.model_for(agent)  # step a missing key) fails here, named; the SDK loads on first use
    return services


def _telemetry(settings: Settings) -> RunTelemetry | None:
    """This function's tracer (None when `STEPLINE_TRACING` is off: OpenTelemetry is then never imported).

    Every invocation exports before it returns: Lambda freezes the environment right after.
    """
    if settings.tracing == "off":
        return None
    from ..tracing.setup import telemetry_from_env

    service = os.environ.get("POWERTOOLS_SERVICE_NAME") or "stepline"
    return telemetry_from_env(
        {**os.environ, "STEPLINE_TRACING": settings.tracing},
        service=service,
        flush_each_invocation=True,
        region=settings.region,
    )


def _model_specs() -> list[str]:
    """The model specifications of the deployment's agents (loading them imports their modules)."""
    settings = Settings.from_env(os.environ)
    agents = agents_from_env({"STEPLINE_AGENT": settings.agent, "STEPLINE_TOOLS": settings.tools})
    return [agent.model_spec(settings.model) for _, agent in agents]


def _stream_push(settings: Settings) -> RunNotifier | None:
    """The Event API notifier when both its domains are set, else None (the streams poll).

    Coalesced: one publish per run per `PUSH_WINDOW` (each publish and each delivery is billed);
    the stream function's streams poll fast for that window after each (`stepline.api.tail`).
    """
    if not (settings.events_http_domain and settings.events_realtime_domain):
        return None
    from ..runtime.stream_push import CoalescingNotifier
    from .appsync_auth import EventApi
    from .appsync_events import AppSyncEventsNotifier

    api = EventApi(settings.events_http_domain, settings.events_realtime_domain, settings.region)
    return CoalescingNotifier(AppSyncEventsNotifier(api))


@functools.cache
def services_from_env(*, model_now: bool = False) -> Services:
    """The services of this process, from `os.environ` (once per cold start)."""
    return build_services(Settings.from_env(os.environ), model_now=model_now)


MODEL_FUNCTIONS = frozenset({"stepline-model-step"})
"""The worker functions that call the model (the others never import a provider's SDK)."""


def worker_handler(function_name: str, bind: HandlerFactory) -> Handler:
    """The Lambda handler of one worker function (`stepline/stack/functions/<name>/app.py`), with Powertools.

    `bind` is the function's own handler (`stepline.runtime.handle_*`): its cold start imports that
    handler's path only.

    With stream push, the notifications the invocation queued are sent before it returns (an
    environment is frozen between invocations; one left unsent costs the stream a poll interval).
    """
    model_now = function_name in MODEL_FUNCTIONS
    handler = bind(lambda: services_from_env(model_now=model_now))
    if os.environ.get("STEPLINE_SNAPSTART") == "1":
        from . import snapstart

        snapstart.install(
            lambda: snapstart.prime(_model_specs, with_model=model_now), forget_services=services_from_env.cache_clear
        )

    def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            return handler(event, context)
        finally:
            flush_notifications()

    run.__name__ = getattr(handler, "__name__", function_name)
    return _instrument(function_name, run)


def _reconciler(
    settings: Settings, *, client: Callable[[str], Any] = _client
) -> tuple[Services, StepFunctionsOrchestrator]:
    """The store and the executions, for closing runs; no model (it is never called) and no provider key."""
    from ..llm.scripted import ScriptedModel

    if not settings.state_machine_arn:
        raise ConfigurationError("Stepline environment is not usable: STEPLINE_STATE_MACHINE_ARN: required")
    blobs = S3BlobStore(settings.bucket, client_factory=lambda: client("s3"))
    store = DynamoStore(
        client("dynamodb"),
        agent_table=settings.agent_table,
        events_table=settings.events_table,
        blobs=blobs,
        delta_retention_ms=settings.event_retention_days * 24 * 3600 * 1000,
    )
    executions = StepFunctionsOrchestrator(
        client("stepfunctions"),
        state_machine_arn=settings.state_machine_arn,
        approval_timeout_seconds=settings.approval_timeout_seconds,
    )
    services = Services(
        store=store,
        blobs=blobs,
        model=ScriptedModel.from_script([]),
        orchestrator=None,
        telemetry=_telemetry(settings),
    )
    return services, executions


def reconciler_handler() -> Handler:
    """The reconciler function's handler (`stack/functions/reconciler/app.py`): status changes and the sweep."""
    from ..runtime.reconcile import handle_event

    built: list[tuple[Services, StepFunctionsOrchestrator]] = []

    def reconcile(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if not built:  # once per cold start
            built.append(_reconciler(Settings.from_env(os.environ)))
        services, executions = built[0]
        try:
            return handle_event(services, executions, event)
        finally:  # the root spans of the runs it closed
            if services.telemetry is not None:
                services.telemetry.flush()

    return _instrument("stepline-reconciler", reconcile)


def _instrument(function_name: str, handler: Handler) -> Handler:
    """`stepline.aws.observability.instrument`, imported here: the workers load Powertools, the API functions never."""
    from .observability import instrument

    return instrument(function_name, handler)
