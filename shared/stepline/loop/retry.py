"""When a failed model call is retried: decided here and only here (docs/loop.md, "Retries").

    a transient failure (`is_transient`)             429 (honouring retry-after), 5xx, overloaded,
                                                     timeouts, dropped connections, and the same
                                                     reported as an error event inside the stream
    ├── nothing visible streamed in this step yet    safe boundary: retry (`may_retry` is True)
    └── visible output already streamed              no automatic retry: the partial result is
                                                     kept and the message records the error
    a permanent failure (bad request, auth, …)       never retried

Both paths ask `may_retry`: `run_model_call` before it retries inside the step (in process and in
a Lambda alike), and the step's outcome (`StepOutcome.retryable`), which the state machine's
`TransientModelError` retry follows. An infrastructure failure (a Lambda that crashed or timed out
mid-step) is another matter: Step Functions re-runs the step from its checkpoint with `reset-step`
whatever the step had streamed, which is the durable promise (`runtime.worker`).

`failure_text` and `retry_reason` are what clients and stored records read: provider-neutral
sentences, never a Python class name.
"""

from __future__ import annotations

from typing import Any, cast

from ..errors import StepLineError
from ..llm.errors import ModelCallError, in_stream_error

__all__ = ["as_model_error", "failure_text", "is_transient", "may_retry", "retry_reason"]


def is_transient(error: BaseException) -> bool:
    """Whether the same request may succeed later (a chunk timeout counts)."""
    if isinstance(error, ModelCallError):
        return error.retryable
    return isinstance(error, TimeoutError)


def may_retry(error: BaseException, *, visible: bool) -> bool:
    """The safe-boundary rule: transient, and nothing visible streamed in this step."""
    return is_transient(error) and not visible


def as_model_error(error: Any, *, provider: str) -> ModelCallError:
    """An `error` part's payload as a classified `ModelCallError` (a provider's JSON, text or exception)."""
    if isinstance(error, ModelCallError):
        return error
    if isinstance(error, dict):
        payload = cast(dict[str, Any], error)
        inner = payload.get("error")
        if isinstance(inner, dict):
            payload = cast(dict[str, Any], inner)
        names = [payload.get("code"), payload.get("type")]
        return in_stream_error(names, payload.get("message"), provider=provider, label=provider.capitalize())
    text = str(error) if isinstance(error, str | StepLineError) else None
    return in_stream_error([], text, provider=provider, label=provider.capitalize())


def failure_text(error: BaseException) -> str:
    """The sentence a failed step records (the run's `error.message`): never a class name."""
    if isinstance(error, StepLineError) and str(error):
        return str(error)
    if isinstance(error, TimeoutError):
        return "the model stream timed out"
    return "the model call failed"


def retry_reason(error: BaseException) -> str:
    """A retry's `reason` in `metadata.retries`: the kind of failure and its status, if any."""
    if isinstance(error, ModelCallError):
        status = f" ({error.status_code})" if error.status_code is not None else ""
        return f"{error.kind.replace('_', ' ')}{status}"
    return "timeout"
