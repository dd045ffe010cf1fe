"""Where the runtime joins a run's trace: each handler invocation, each request on the run, its end.

Every helper is a no-op when the process has no telemetry (`Services.telemetry` is None: tracing
off), and then costs nothing: no read, no import of OpenTelemetry. With telemetry, a handler
invocation reads the run (one item) to find its trace context, and exports before it returns
when the process may be frozen after it (Lambda).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Generator, Mapping
from typing import Any

from ..loop import telemetry as loop_telemetry
from ..store.errors import NotFound
from ..store.records import RunRecord
from .services import Services

__all__ = ["flush_invocation", "request_span", "run_ended", "traced_handler"]

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def traced_handler(function: str, handler: Handler, services: Callable[[], Services]) -> Handler:
    """`handler` as one span of the run's trace, named `function` (`ModelStep`, `AwaitInput`, …)."""

    @functools.wraps(handler)
    def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        current = services()
        telemetry = current.telemetry
        if telemetry is None:
            return handler(event, context)
        record = _run(current, event)
        try:
            with telemetry.invocation(
                function, record, invocation_id=str(getattr(context, "aws_request_id", ""))
            ) as span:
                result = handler(event, context)
                span.set("stepline.outcome", str(result.get("next") or result.get("status") or "done"))
                return result
        finally:
            if telemetry.flush_each_invocation:
                telemetry.flush()

    return run


def _run(services: Services, event: Mapping[str, Any]) -> RunRecord | None:
    user_id, run_id = event.get("userId"), event.get("runId")
    if not isinstance(user_id, str) or not isinstance(run_id, str):
        return None
    try:
        return services.store.get_run(user_id, run_id)
    except (NotFound, ValueError):
        return None


@contextlib.contextmanager
def request_span(
    services: Services,
    name: str,
    run: RunRecord | None,
    attributes: Mapping[str, loop_telemetry.AttributeValue | None] | None = None,
) -> Generator[loop_telemetry.Span, None, None]:
    """An operation on a run from outside its workflow (start, decide, answer, abort), in its trace."""
    telemetry = services.telemetry
    if telemetry is None or run is None:
        yield loop_telemetry.Span(None)
        return
    # Not flushed here: a request's response should not wait for an export (the buffered API
    # function flushes after its response is built, `aws.api`; the stream function's batch
    # exporter sends while the stream is open).
    with telemetry.request(name, run, attributes) as span:
        yield span


def run_ended(services: Services, run: RunRecord, *, step_count: int) -> None:
    """The run's root span, written by the call that committed its end."""
    if services.telemetry is not None:
        services.telemetry.run_ended(run, step_count=step_count)


def flush_invocation(services: Services) -> None:
    """Export the invocation's spans now when the process may be frozen after it returns (Lambda)."""
    if services.telemetry is not None and services.telemetry.flush_each_invocation:
        services.telemetry.flush()
