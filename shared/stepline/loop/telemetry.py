"""OpenTelemetry spans for a run, its steps, model calls and tools; off unless `LoopConfig.tracer` is set.

The tracer is duck-typed: anything with `start_as_current_span(name, attributes=...)` returning a
context manager that yields a span with `set_attribute(key, value)`, as an OpenTelemetry `Tracer`
does. The core therefore imports nothing from OpenTelemetry. Without a tracer every helper here is
a no-op.

    stepline.run            stepline.run_id, gen_ai.provider.name, gen_ai.request.model,
                            stepline.outcome, stepline.finish_reason, stepline.step_count
    └─ stepline.step        stepline.run_id, stepline.step_number, stepline.outcome,
                            stepline.finish_reason, stepline.error_code
       ├─ stepline.model_call   gen_ai.provider.name, gen_ai.request.model, stepline.step_number,
       │                        stepline.attempt, gen_ai.response.finish_reasons,
       │                        gen_ai.usage.input_tokens, gen_ai.usage.output_tokens
       └─ stepline.tool     gen_ai.tool.name, gen_ai.tool.call.id, stepline.step_number,
                            stepline.tool.error

A span that ends with an exception gets `error.type` (the exception's class name); the exception
itself is re-raised only after the span is closed, so the tracer does not record its message as an
event. Spans carry ids, names, counts and flags only: never prompt text, tool input or output,
error messages, or secrets. (The span status is left unset: setting it needs OpenTelemetry's
`StatusCode`, which the core does not import; `error.type` is the semantic-convention signal.)
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final

__all__ = [
    "MODEL_CALL",
    "RUN",
    "STEP",
    "TOOL",
    "AttributeValue",
    "Span",
    "span",
]

RUN: Final = "stepline.run"
STEP: Final = "stepline.step"
MODEL_CALL: Final = "stepline.model_call"
TOOL: Final = "stepline.tool"

AttributeValue = str | bool | int | float | Sequence[str]


class Span:
    """A live span (or, without a tracer, nothing): attributes set later, such as a finish reason."""

    __slots__ = ("_span",)

    def __init__(self, span: Any) -> None:
        self._span = span

    def set(self, key: str, value: AttributeValue | None) -> None:
        """Set one attribute; None (unknown) is left out."""
        if self._span is not None and value is not None:
            self._span.set_attribute(key, value)

    def update(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        """Set several attributes; None values are left out."""
        for key, value in attributes.items():
            self.set(key, value)

    def error(self, error: BaseException) -> None:
        """Mark the span as failed: the exception's class name only, never its message."""
        self.set("error.type", type(error).__name__)


_NO_SPAN: Final = Span(None)


@contextmanager
def span(tracer: Any, name: str, attributes: Mapping[str, AttributeValue | None]) -> Generator[Span, None, None]:
    """A span made current for its body (so spans opened inside nest under it); a no-op without a tracer."""
    if tracer is None:
        yield _NO_SPAN
        return
    clean = {k: v for k, v in attributes.items() if v is not None}
    failure: BaseException | None = None
    with tracer.start_as_current_span(name, attributes=clean) as live:
        handle = Span(live)
        try:
            yield handle
        except BaseException as error:  # re-raised below, once the span is closed
            handle.error(error)
            failure = error
    if failure is not None:
        # Raised outside the tracer's span, so it does not record the message (which may quote a prompt).
        raise failure
