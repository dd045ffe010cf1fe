"""The unattended parts of the AWS functions, from their environment (the variables template.yaml sets).

STEPLINE_CALLBACK_SECRET_ARN        the Secrets Manager secret callbacks are signed with
                                    (unset: `POST /api/runs` refuses a `callbackUrl`)
STEPLINE_CALLBACK_ALLOWED_NETWORKS  private ranges callbacks may reach (`10.0.0.0/8,...`)
STEPLINE_CALLBACK_QUEUE_URL         the sender's queue (its function only)
STEPLINE_HOOK_SECRET_PREFIX         inbound hooks' secrets are named `<prefix><agent>/<hook>`
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import boto3
from pydantic import BaseModel, ConfigDict, Field

from ..runtime.callback_urls import UrlPolicy, parse_networks
from ..runtime.hook_signatures import check_secret
from ..runtime.services import Services
from .unattended import DynamoDeliveryLog, DynamoScheduleState, dispatch, send_callbacks
from .wiring import ConfigurationError, Settings, services_from_env

if TYPE_CHECKING:  # the dispatcher and the callback sender carry no FastAPI: only the API functions do
    from ..api.deps import ApiOptions


def _client(service: str) -> Any:
    return cast(Any, boto3.client(service))  # pyright: ignore[reportUnknownMemberType]


__all__ = ["SecretsHookSecrets", "UnattendedSettings", "callback_handler", "dispatch_handler", "with_unattended"]

SECRET_CACHE_SECONDS = 300.0
"""How long a hook's secret is kept in the process (a rotated secret is read within five minutes)."""


class UnattendedSettings(BaseModel):
    """The unattended variables of a function's environment (see the module docstring)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    callback_secret_arn: str | None = Field(alias="STEPLINE_CALLBACK_SECRET_ARN", default=None)
    allowed_networks: str = Field(alias="STEPLINE_CALLBACK_ALLOWED_NETWORKS", default="")
    queue_url: str | None = Field(alias="STEPLINE_CALLBACK_QUEUE_URL", default=None)
    hook_secret_prefix: str | None = Field(alias="STEPLINE_HOOK_SECRET_PREFIX", default=None)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> UnattendedSettings:
        return cls.model_validate(dict(env))

    def policy(self) -> UrlPolicy:
        try:
            return UrlPolicy(allowed_networks=parse_networks(self.allowed_networks))
        except ValueError as error:
            raise ConfigurationError(f"STEPLINE_CALLBACK_ALLOWED_NETWORKS: {error}") from None


def _read_secret(client: Any, secret_id: str, what: str) -> str | None:
    try:
        value = str(client.get_secret_value(SecretId=secret_id)["SecretString"])
    except client.exceptions.ResourceNotFoundException:
        return None
    try:
        return check_secret(value.strip(), what)
    except ValueError as error:
        raise ConfigurationError(str(error)) from None


class SecretsHookSecrets:
    """Hook secrets from Secrets Manager (`<prefix><agent>/<hook>`), kept for a few minutes."""

    def __init__(self, client: Any, prefix: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._client, self._prefix, self._clock = client, prefix, clock
        self._cache: dict[str, tuple[float, str | None]] = {}
        self._lock = threading.Lock()

    def secret(self, agent: str, hook: str) -> str | None:
        name = f"{self._prefix}{agent}/{hook}"
        with self._lock:
            cached = self._cache.get(name)
        if cached is not None and self._clock() - cached[0] < SECRET_CACHE_SECONDS:
            return cached[1]
        value = _read_secret(self._client, name, f"the secret {name}")
        with self._lock:
            self._cache[name] = (self._clock(), value)
        return value


def with_unattended(services: Services, options: ApiOptions, env: Mapping[str, str] | None = None) -> ApiOptions:
    """The API's options with callbacks and hooks as the environment configures them (and the delivery log)."""
    settings = UnattendedSettings.from_env(os.environ if env is None else env)
    base = Settings.from_env(os.environ if env is None else env)
    services.deliveries = DynamoDeliveryLog(_client("dynamodb"), base.agent_table)
    secrets = _client("secretsmanager")
    return dataclasses.replace(
        options,
        callbacks=settings.policy() if settings.callback_secret_arn else None,
        hook_secrets=SecretsHookSecrets(secrets, settings.hook_secret_prefix) if settings.hook_secret_prefix else None,
    )


def dispatch_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The dispatcher function's handler (`functions/schedule_dispatch/app.py`), with Powertools' logs and metrics."""
    from .observability import instrument  # Powertools: the API functions, which import this module, never load it

    built: list[tuple[Services, DynamoScheduleState]] = []

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        del context
        if not built:
            settings = Settings.from_env(os.environ)
            built.append((services_from_env(), DynamoScheduleState(_client("dynamodb"), settings.agent_table)))
        services, state = built[0]
        done = dispatch(services, state, event)
        if done.failed:  # the occurrences are tried again at the next tick; the failure shows in the metrics
            raise RuntimeError(f"{len(done.failed)} occurrence(s) not started: {done.failed[0][0]}")
        return {"started": [s.run.run_id for s in done.started if not s.replayed]}

    return instrument("stepline-schedule-dispatch", handle)


def callback_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The callback sender's handler (`functions/callback_sender/app.py`): an SQS batch of lifecycle events.

    With Powertools' logs and metrics, like the other functions; each attempt is a span of its run's trace.
    """
    from .observability import instrument

    built: list[tuple[Services, DynamoDeliveryLog, Any, str, str, UrlPolicy]] = []

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        del context
        if not built:
            settings, base = UnattendedSettings.from_env(os.environ), Settings.from_env(os.environ)
            if not settings.callback_secret_arn or not settings.queue_url:
                raise ConfigurationError("STEPLINE_CALLBACK_SECRET_ARN and STEPLINE_CALLBACK_QUEUE_URL are required")
            secret = _read_secret(_client("secretsmanager"), settings.callback_secret_arn, "the callback secret")
            if secret is None:
                raise ConfigurationError(f"the callback secret {settings.callback_secret_arn} does not exist")
            log = DynamoDeliveryLog(_client("dynamodb"), base.agent_table)
            built.append((services_from_env(), log, _client("sqs"), settings.queue_url, secret, settings.policy()))
        services, log, sqs, queue_url, secret, policy = built[0]
        return send_callbacks(services, log, sqs, queue_url, event, secret=secret, policy=policy)

    return instrument("stepline-callback-sender", handle)
