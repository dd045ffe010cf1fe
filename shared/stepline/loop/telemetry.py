"""OpenTelemetry spans and metrics of the loop, in the GenAI semantic conventions; off without a tracer.

    invoke_agent {agent}       (in process: the whole `stream_text` run; on the durable path the
    │                           run's root span, `stepline.tracing`) gen_ai.operation.name,
    │                           gen_ai.agent.name, gen_ai.provider.name, gen_ai.request.model,
    │                           stepline.run_id, stepline.outcome, stepline.step_count
    └─ stepline.step           stepline.run_id, stepline.step_number, stepline.outcome,
       │                       stepline.finish_reason, stepline.error_code
       ├─ chat {model}         (kind CLIENT, one per attempt) gen_ai.operation.name, gen_ai.provider.name,
       │                       gen_ai.request.model, gen_ai.request.* (the settings sent),
       │                       gen_ai.response.id/model/finish_reasons, gen_ai.usage.*,
       │                       stepline.step_number, stepline.attempt, stepline.retry.reason
       └─ execute_tool {tool}  gen_ai.operation.name, gen_ai.tool.name, gen_ai.tool.call.id,
                               gen_ai.tool.type, stepline.step_number, stepline.tool.error

A span that ends with an exception gets `error.type` (the exception's class name) and an error
status without a description; the exception is re-raised only after the span is closed, so the
tracer does not record its message. By default spans carry ids, names, counts and flags only.
**Content** (the conventions' opt-in attributes: `gen_ai.system_instructions`,
`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.tool.definitions`,
`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`) is added only with
`LoopConfig.trace_content`, always masked and sized (`request_view`).

Metrics (with `LoopConfig.meter`): `gen_ai.client.token.usage` (histogram, `{token}`, by
`gen_ai.token.type`) and `gen_ai.client.operation.duration` (histogram, seconds) per model call.

The tracer and meter are duck-typed OpenTelemetry objects; OpenTelemetry's API (`SpanKind`,
`Status`) is imported only when a tracer is set, so a loop without telemetry imports nothing of it.
"""

from __future__ import annotations

import weakref
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, Literal

from ..protocol._json import dumps

__all__ = [
    "CHAT",
    "EXECUTE_TOOL",
    "INVOKE_AGENT",
    "STEP",
    "AttributeValue",
    "Span",
    "content",
    "record_model_call",
    "span",
]

INVOKE_AGENT: Final = "invoke_agent"
CHAT: Final = "chat"
EXECUTE_TOOL: Final = "execute_tool"
STEP: Final = "stepline.step"

AttributeValue = str | bool | int | float | Sequence[str]
SpanKindName = Literal["internal", "client", "server"]


class Span:
    """A live span (or, without a tracer, nothing): attributes set later, such as a finish reason."""

    __slots__ = ("_span",)

    def __init__(self, span: Any) -> None:
        self._span = span

    @property
    def live(self) -> bool:
        """Whether there is a span behind this handle (a tracer was set)."""
        return self._span is not None

    @property
    def traceparent(self) -> str | None:
        """This span's W3C `traceparent` (None without a span), for a later span to link to."""
        if self._span is None:
            return None
        context = self._span.get_span_context()
        return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"

    def set(self, key: str, value: AttributeValue | None) -> None:
        """Set one attribute; None (unknown) is left out."""
        if self._span is not None and value is not None:
            self._span.set_attribute(key, value)

    def update(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        """Set several attributes; None values are left out."""
        for key, value in attributes.items():
            self.set(key, value)

    def error(self, error: BaseException | str) -> None:
        """Mark the span as failed: the exception's class name (or a stable code), never a message."""
        if self._span is None:
            return
        from opentelemetry.trace import Status, StatusCode

        self.set("error.type", error if isinstance(error, str) else type(error).__name__)
        self._span.set_status(Status(StatusCode.ERROR))


_NO_SPAN: Final = Span(None)


def content(value: Any) -> str:
    """A content attribute's value: compact JSON (the conventions' structured attributes as strings)."""
    return value if isinstance(value, str) else dumps(value)


def _kind(name: SpanKindName) -> Any:
    from opentelemetry.trace import SpanKind

    return {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT, "server": SpanKind.SERVER}[name]


@contextmanager
def span(
    tracer: Any,
    name: str,
    attributes: Mapping[str, AttributeValue | None],
    *,
    kind: SpanKindName = "internal",
    links: Sequence[Any] = (),
) -> Generator[Span, None, None]:
    """A span made current for its body (so spans opened inside nest under it); a no-op without a tracer."""
    if tracer is None:
        yield _NO_SPAN
        return
    clean = {k: v for k, v in attributes.items() if v is not None}
    failure: BaseException | None = None
    options: dict[str, Any] = {"attributes": clean, "kind": _kind(kind)}
    if links:
        options["links"] = list(links)
    with tracer.start_as_current_span(name, record_exception=False, set_status_on_exception=False, **options) as live:
        handle = Span(live)
        try:
            yield handle
        except BaseException as error:  # re-raised below, once the span is closed
            handle.error(error)
            failure = error
    if failure is not None:
        # Raised outside the tracer's span, so it does not record the message (which may quote a prompt).
        raise failure


_INSTRUMENTS: weakref.WeakKeyDictionary[Any, tuple[Any, Any]] = weakref.WeakKeyDictionary()


def _instruments(meter: Any) -> tuple[Any, Any]:
    """The two GenAI client histograms of `meter`, created once per meter."""
    found = _INSTRUMENTS.get(meter)
    if found is None:
        tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Number of input and output tokens used."
        )
        duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration."
        )
        found = (tokens, duration)
        _INSTRUMENTS[meter] = found
    return found


def record_model_call(
    meter: Any,
    *,
    provider: str,
    model: str,
    response_model: str | None,
    seconds: float,
    input_tokens: int | None,
    output_tokens: int | None,
    error_type: str | None,
) -> None:
    """The GenAI client metrics of one model call (a no-op without a meter)."""
    if meter is None:
        return
    tokens, duration = _instruments(meter)
    common: dict[str, str] = {
        "gen_ai.operation.name": CHAT,
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
    }
    if response_model:
        common["gen_ai.response.model"] = response_model
    duration.record(seconds, {**common, **({"error.type": error_type} if error_type else {})})
    for kind, count in (("input", input_tokens), ("output", output_tokens)):
        if count is not None:
            tokens.record(count, {**common, "gen_ai.token.type": kind})
