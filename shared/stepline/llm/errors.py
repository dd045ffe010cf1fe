"""Model call failures, classified once so the loop can decide whether to retry.

    ModelCallError                 a model call failed (StepLineError)
    ├── retryable=True             429 (with `retry_after`), 5xx, timeouts, dropped connections
    └── retryable=False            bad request, authentication, permission, not found, …
    UnsupportedCapabilityError     the model cannot take an input (a file type, …); never retried

Provider adapters turn their SDK's exceptions into these; the loop reads only `retryable`,
`retry_after` and `kind`. Messages never carry credentials or request bodies.
"""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal

from ..errors import StepLineError

__all__ = ["ErrorKind", "ModelCallError", "UnsupportedCapabilityError", "parse_retry_after", "retry_after_seconds"]

ErrorKind = Literal[
    "rate_limit", "server", "timeout", "connection", "bad_request", "auth", "not_found", "overloaded", "other"
]

_RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "connection", "overloaded"})


class ModelCallError(StepLineError):
    """A model call failed.

    Attributes:
        kind: What went wrong, provider-neutral.
        retryable: Whether the same request may succeed later.
        retry_after: Seconds the provider asked us to wait (from `retry-after`), if any.
        status_code: The HTTP status, when there was one.
        provider: The provider name (`openai`, `anthropic`, `scripted`).
        code: The provider's own error code (`insufficient_quota`, `overloaded_error`), if any.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind,
        provider: str,
        status_code: int | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.kind: ErrorKind = kind
        self.provider = provider
        self.status_code = status_code
        self.retry_after = retry_after
        self.retryable = kind in _RETRYABLE if retryable is None else retryable

    @classmethod
    def from_status(
        cls,
        status_code: int,
        message: str,
        *,
        provider: str,
        retry_after: float | None = None,
        code: str | None = None,
        retryable: bool | None = None,
    ) -> ModelCallError:
        """Classify an HTTP status."""
        kind: ErrorKind
        if status_code == 429:
            kind = "rate_limit"
        elif status_code == 529:
            kind = "overloaded"
        elif status_code in (408, 504):
            kind = "timeout"
        elif status_code >= 500:
            kind = "server"
        elif status_code in (401, 403):
            kind = "auth"
        elif status_code == 404:
            kind = "not_found"
        elif 400 <= status_code < 500:
            kind = "bad_request"
        else:
            kind = "other"
        return cls(
            message,
            kind=kind,
            provider=provider,
            status_code=status_code,
            retry_after=retry_after,
            code=code,
            retryable=retryable,
        )


class UnsupportedCapabilityError(StepLineError):
    """The model cannot take this input (for example a PDF sent to a text-only model)."""

    def __init__(self, message: str, *, provider: str, model_id: str) -> None:
        super().__init__(message)
        self.provider = provider
        self.model_id = model_id


def parse_retry_after(value: str | None, *, milliseconds: bool = False) -> float | None:
    """Seconds to wait from a retry header; None when absent or unreadable.

    Reads `retry-after` (delta-seconds or an HTTP date), or `retry-after-ms` with `milliseconds=True`.
    """
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None if milliseconds else _seconds_until(value)
    if number < 0:
        return None
    return number / 1000 if milliseconds else number


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms`, else `retry-after` (both providers send these)."""
    milliseconds = parse_retry_after(headers.get("retry-after-ms"), milliseconds=True)
    return milliseconds if milliseconds is not None else parse_retry_after(headers.get("retry-after"))


def _seconds_until(http_date: str) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(http_date)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
