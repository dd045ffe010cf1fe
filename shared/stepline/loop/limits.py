"""`Limits`: what a run, a user and a tenant may spend, declared per agent and per deployment (pure).

    Agent(..., limits=Limits(run_usd=0.50, run_tool_calls=20, user_day_usd=5, tenant_month_tokens=50_000_000))

Per run: `run_tokens` (input plus output), `run_usd`, `run_tool_calls`, `run_steps`. Per user and
per tenant, per UTC day and month, in tokens and USD: `user_day_tokens`, `user_day_usd`,
`user_month_tokens`, `user_month_usd`, and the same with `tenant_`. Unset: no limit.
Per deployment only (`STEPLINE_LIMITS`; an agent's are not read): `user_requests_per_minute` and
`tenant_requests_per_minute`, the rate of `POST /api/chat` and `POST /api/runs` (`stepline.api.rate_limits`);
`user_working_runs` and `tenant_working_runs`, the runs that may work at once (`stepline.runtime.working_runs`),
and `working_runs_wait_seconds` (default 20, 0 to 600), how long a new run at a full cap waits for a
slot before it is refused (`stepline.runtime.slot_waits`).
`assumed_output_tokens` is the worst case of a call's output when the agent sets no
`max_output_tokens`.

A limit that is negative, zero (where that makes no sense), NaN, infinite or not a number raises
`LimitsError` naming the setting; in `Agent(limits=...)` that is a definition error, in
`STEPLINE_LIMITS` a start-up error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from ..errors import StepLineError

__all__ = ["LIMIT_NAMES", "LimitName", "Limits", "LimitsError"]

Tokens = Annotated[int, Field(ge=1, strict=True)]
Count = Annotated[int, Field(ge=0, strict=True)]
Usd = Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]
Seconds = Annotated[float, Field(ge=0, le=600, allow_inf_nan=False, strict=True)]

LimitName = Literal[
    "run_tokens",
    "run_usd",
    "run_tool_calls",
    "run_steps",
    "user_day_tokens",
    "user_day_usd",
    "user_month_tokens",
    "user_month_usd",
    "tenant_day_tokens",
    "tenant_day_usd",
    "tenant_month_tokens",
    "tenant_month_usd",
]


class LimitsError(StepLineError, ValueError):
    """Limits that cannot be used: the message names the setting."""


class Limits(BaseModel):
    """Spending limits (None: no limit). See the module docstring."""

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)

    run_tokens: Tokens | None = None
    run_usd: Usd | None = None
    run_tool_calls: Count | None = None
    run_steps: Tokens | None = None
    user_day_tokens: Tokens | None = None
    user_day_usd: Usd | None = None
    user_month_tokens: Tokens | None = None
    user_month_usd: Usd | None = None
    tenant_day_tokens: Tokens | None = None
    tenant_day_usd: Usd | None = None
    tenant_month_tokens: Tokens | None = None
    tenant_month_usd: Usd | None = None
    user_requests_per_minute: Tokens | None = None
    tenant_requests_per_minute: Tokens | None = None
    user_working_runs: Tokens | None = None
    tenant_working_runs: Tokens | None = None
    working_runs_wait_seconds: Seconds = 20.0
    assumed_output_tokens: Tokens = 4096

    def over(self, base: Limits | None) -> Limits:
        """These limits where they are set, `base`'s elsewhere (an agent's over the deployment's)."""
        if base is None:
            return self
        return base.model_copy(update={name: getattr(self, name) for name in self.model_fields_set})

    def value(self, name: LimitName) -> float | None:
        return cast(float | None, getattr(self, name))

    @property
    def shared(self) -> bool:
        """Whether a user or tenant limit is set (the calls then reserve on the shared counters)."""
        return any(self.value(name) is not None for name in LIMIT_NAMES if not name.startswith("run_"))

    @property
    def tenant(self) -> bool:
        """Whether a tenant spending limit is set (the tenant's counters are then kept)."""
        return any(self.value(name) is not None for name in LIMIT_NAMES if name.startswith("tenant_"))

    @property
    def rates(self) -> bool:
        """Whether a request rate limit is set (each request then counts on the shared counters)."""
        return self.user_requests_per_minute is not None or self.tenant_requests_per_minute is not None

    @classmethod
    def parse(cls, raw: object, *, source: str) -> Limits:
        """Limits from a `Limits`, or a mapping of its settings (snake_case or camelCase)."""
        if isinstance(raw, Limits):
            return raw
        if not isinstance(raw, Mapping):
            raise LimitsError(f"{source}: expected an object of limits (such as {{'run_usd': 0.5}})")
        try:
            return cls.model_validate(cast(Mapping[str, Any], raw))
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in issue['loc'])}: {_message(issue)}" for issue in error.errors()
            )
            raise LimitsError(f"{source}: {problems}") from None


def _message(issue: Any) -> str:
    if issue["type"] == "extra_forbidden":
        return "not a limit (the limits: " + ", ".join(LIMIT_NAMES) + ")"
    return str(issue["msg"])


LIMIT_NAMES: tuple[LimitName, ...] = get_args(LimitName)
