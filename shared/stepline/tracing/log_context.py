"""Log records carry the trace and the run they belong to: `trace_id`, `span_id`, `run_id`.

`bind_trace` sets them for the span being run (a context variable, so concurrent requests of one
process keep their own); `TraceLogFilter` on a handler copies them onto every record it writes,
as attributes, which Powertools' JSON formatter writes as keys (and a plain formatter can name as
`%(trace_id)s`). A record written outside any span gets none of them. Standard library only: the
filter is installed whether or not tracing is on.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Generator

__all__ = ["TraceLogFilter", "bind_trace", "current_trace", "forget_last_trace", "last_trace"]

_CURRENT: contextvars.ContextVar[tuple[str, str, str | None] | None] = contextvars.ContextVar(
    "stepline_log_trace", default=None
)
_LAST: contextvars.ContextVar[tuple[str, str, str | None] | None] = contextvars.ContextVar(
    "stepline_log_last_trace", default=None
)


@contextlib.contextmanager
def bind_trace(trace_id: str, span_id: str, run_id: str | None) -> Generator[None, None, None]:
    """Records written inside carry these ids."""
    token = _CURRENT.set((trace_id, span_id, run_id))
    _LAST.set((trace_id, span_id, run_id))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_trace() -> tuple[str, str, str | None] | None:
    """(trace id, span id, run id) of the span being run, if any."""
    return _CURRENT.get()


def last_trace() -> tuple[str, str, str | None] | None:
    """The ids last bound in this context, after their span ended (for a line logged once it is done)."""
    return _LAST.get()


def forget_last_trace() -> None:
    """Start an invocation with no ids from the one before."""
    _LAST.set(None)


class TraceLogFilter(logging.Filter):
    """Adds `trace_id`, `span_id` and `run_id` to records written inside a bound span."""

    def filter(self, record: logging.LogRecord) -> bool:
        bound = _CURRENT.get()
        if bound is not None:
            trace_id, span_id, run_id = bound
            record.trace_id = trace_id
            record.span_id = span_id
            if run_id is not None and not hasattr(record, "run_id"):
                record.run_id = run_id
        return True
