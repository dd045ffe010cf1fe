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
from typing import Any, cast

import boto3
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import StepLineError
from ..llm.registry import deferred_model, resolve_model
from ..runtime.handlers import Handler, handlers
from ..runtime.services import Services
from ..tools import load_toolset
from .dynamodb import DynamoStore
from .observability import instrument
from .s3 import S3BlobStore
from .stepfunctions import StepFunctionsOrchestrator

__all__ = ["ConfigurationError", "Settings", "build_services", "services_from_env", "worker_handler"]


class ConfigurationError(StepLineError):
    """The function's environment is missing or has a malformed Stepline variable."""


class Settings(BaseModel):
    """The Stepline variables of a function's environment."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    agent_table: str = Field(alias="STEPLINE_AGENT_TABLE", min_length=3)
    events_table: str = Field(alias="STEPLINE_EVENTS_TABLE", min_length=3)
    bucket: str = Field(alias="STEPLINE_BUCKET", min_length=3)
    model: str = Field(alias="STEPLINE_MODEL", pattern=r"^[a-z]+:.+$")
    tools: str = Field(alias="STEPLINE_TOOLS", default="stepline.tools.workspace")
    state_machine_arn: str | None = Field(alias="STEPLINE_STATE_MACHINE_ARN", default=None)
    approval_timeout_seconds: int = Field(alias="STEPLINE_APPROVAL_TIMEOUT_SECONDS", default=86400, ge=1)
    max_steps: int = Field(alias="STEPLINE_MAX_STEPS", default=25, ge=1, le=1000)
    event_retention_days: int = Field(alias="STEPLINE_EVENT_RETENTION_DAYS", default=7, ge=1)
    openai_key_parameter: str | None = Field(alias="STEPLINE_OPENAI_KEY_PARAMETER", default=None)
    anthropic_key_parameter: str | None = Field(alias="STEPLINE_ANTHROPIC_KEY_PARAMETER", default=None)
    cors_origins: str = Field(alias="STEPLINE_CORS_ORIGINS", default="")
    """Comma-separated browser origins that may call the API (read by `stepline.aws.api`)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        present = {key: value for key, value in env.items() if key.startswith("STEPLINE_") and value != ""}
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
    blobs = S3BlobStore(settings.bucket, client=client("s3"))
    store = DynamoStore(
        client("dynamodb"),
        agent_table=settings.agent_table,
        events_table=settings.events_table,
        blobs=blobs,
        delta_retention_ms=settings.event_retention_days * 24 * 3600 * 1000,
    )
    provider = settings.model.partition(":")[0]
    parameter = {"openai": settings.openai_key_parameter, "anthropic": settings.anthropic_key_parameter}.get(provider)
    options = {"api_key": _secret(client("ssm"), parameter)} if parameter else {}
    tools, approval = load_toolset(settings.tools)
    orchestrator = (
        StepFunctionsOrchestrator(
            client("stepfunctions"),
            state_machine_arn=settings.state_machine_arn,
            approval_timeout_seconds=settings.approval_timeout_seconds,
        )
        if settings.state_machine_arn
        else None
    )
    return Services(
        store=store,
        blobs=blobs,
        model=(resolve_model if model_now else deferred_model)(settings.model, **options),
        orchestrator=orchestrator,
        tools=tools,
        tool_approval=approval or None,
        approval_timeout_ms=settings.approval_timeout_seconds * 1000,
        max_steps=settings.max_steps,
    )


@functools.cache
def services_from_env(*, model_now: bool = False) -> Services:
    """The services of this process, from `os.environ` (once per cold start)."""
    return build_services(Settings.from_env(os.environ), model_now=model_now)


MODEL_FUNCTIONS = frozenset({"stepline-model-step"})
"""The worker functions that call the model (the others never import a provider's SDK)."""


def worker_handler(function_name: str) -> Handler:
    """The Lambda handler of one worker function (`functions/<name>/app.py`), with Powertools."""
    model_now = function_name in MODEL_FUNCTIONS
    return instrument(function_name, handlers(lambda: services_from_env(model_now=model_now))[function_name])
