"""The run's trace across processes: invocation and request spans under the run's root, the root at the end.

A run is many processes over days (a Lambda invocation per step, an API request a day later for
the approval), so no process can hold its root span open. Each invocation of a worker function
(`invocation`) and each API request that starts, resumes, decides or stops the run (`request`)
is a span whose parent is the run's root span, read from the run record (`RunRecord.trace`) as a
remote parent; the loop's own spans (`stepline.step`, `chat {model}`, `execute_tool {tool}`)
nest inside. When the run ends, the process that committed the end writes the root span itself
(`run_ended`): `invoke_agent {agent}`, from the run's start to its end, with the span id the run
was given at its start (the provider's id generator hands out a preset id for that one span).

Imports OpenTelemetry's SDK: built only when tracing is on (`stepline.tracing.setup`).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Generator, Mapping, Sequence
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from ..loop import telemetry
from ..store.records import RunRecord
from .context import RunTrace
from .log_context import bind_trace

__all__ = ["PresetIds", "RunTelemetry"]

_PRESET: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar("stepline_preset_ids", default=None)
_SCOPE: Final = "stepline"
FLUSH_TIMEOUT_MS: Final = 4000
"""The most an invocation waits for its spans to be exported (the exporter gives up after 3 s)."""


class PresetIds(RandomIdGenerator):
    """Random ids, except the one span a run's end writes under the ids its start chose."""

    def generate_span_id(self) -> int:
        preset = _PRESET.get()
        return preset[1] if preset is not None else super().generate_span_id()

    def generate_trace_id(self) -> int:
        preset = _PRESET.get()
        return preset[0] if preset is not None else super().generate_trace_id()


def _span_context(run_trace: RunTrace, span_id: str | None = None) -> SpanContext:
    flags = TraceFlags(TraceFlags.SAMPLED if run_trace.sampled else TraceFlags.DEFAULT)
    return SpanContext(
        int(run_trace.trace_id, 16), int(span_id or run_trace.span_id, 16), is_remote=True, trace_flags=flags
    )


def _ms_to_ns(ms: int) -> int:
    return ms * 1_000_000


class RunTelemetry:
    """The tracer, meter and settings of one process, and the run-level spans built on them."""

    def __init__(
        self,
        provider: TracerProvider,
        *,
        meter_provider: Any = None,
        capture_content: bool = False,
        flush_each_invocation: bool = False,
        extra_flush: Sequence[Any] = (),
    ) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer(_SCOPE)
        self.meter_provider = meter_provider
        self.meter = meter_provider.get_meter(_SCOPE) if meter_provider is not None else None
        self.capture_content = capture_content
        self.flush_each_invocation = flush_each_invocation
        self._extra_flush = tuple(extra_flush)

    def loop_options(self) -> dict[str, Any]:
        """The `LoopConfig` fields a step gets from this process's telemetry."""
        return {"tracer": self.tracer, "meter": self.meter, "trace_content": self.capture_content}

    @staticmethod
    def parent(run: RunRecord | None) -> Context | None:
        """The run's root span as a remote parent (None: a run without a trace context)."""
        run_trace = RunTrace.parse(run.trace) if run is not None else None
        if run_trace is None:
            return None
        return trace.set_span_in_context(NonRecordingSpan(_span_context(run_trace)))

    @staticmethod
    def link(traceparent: str | None, reason: str) -> Link | None:
        """A link to another span of the run (say, the request that decided what a step resumes with)."""
        run_trace = RunTrace.parse(traceparent)
        return Link(_span_context(run_trace), {"stepline.link": reason}) if run_trace is not None else None

    def link_current(self, traceparents: Sequence[str | None], reason: str) -> None:
        """Link the span being run to earlier spans of the run (the decisions a resumed step applies)."""
        current = trace.get_current_span()
        for traceparent in traceparents:
            run_trace = RunTrace.parse(traceparent)
            if run_trace is not None and current.is_recording():
                current.add_link(_span_context(run_trace), {"stepline.link": reason})

    @contextlib.contextmanager
    def invocation(
        self,
        function: str,
        run: RunRecord | None,
        *,
        invocation_id: str,
        links: Sequence[Link] = (),
    ) -> Generator[telemetry.Span, None, None]:
        """A worker function's invocation (kind SERVER, as the FaaS conventions have it) in the run's trace."""
        attributes: dict[str, telemetry.AttributeValue | None] = {
            "faas.invocation_id": invocation_id,
            "faas.trigger": "other",
            "stepline.run_id": run.run_id if run is not None else None,
            "gen_ai.conversation.id": run.conversation_id if run is not None else None,
            "gen_ai.agent.name": run.agent if run is not None else None,
        }
        with self._span(function, run, attributes, kind=SpanKind.SERVER, links=links) as span:
            yield span

    @contextlib.contextmanager
    def request(
        self, name: str, run: RunRecord, attributes: Mapping[str, telemetry.AttributeValue | None] | None = None
    ) -> Generator[telemetry.Span, None, None]:
        """An API operation on the run (start, decide, answer, abort), in the run's trace."""
        common: dict[str, telemetry.AttributeValue | None] = {
            "stepline.run_id": run.run_id,
            "gen_ai.conversation.id": run.conversation_id,
        }
        with self._span(name, run, {**common, **(attributes or {})}, kind=SpanKind.INTERNAL) as span:
            yield span

    @contextlib.contextmanager
    def _span(
        self,
        name: str,
        run: RunRecord | None,
        attributes: Mapping[str, telemetry.AttributeValue | None],
        *,
        kind: SpanKind,
        links: Sequence[Link] = (),
    ) -> Generator[telemetry.Span, None, None]:
        clean = {k: v for k, v in attributes.items() if v is not None}
        failure: BaseException | None = None
        with self.tracer.start_as_current_span(
            name,
            context=self.parent(run),
            kind=kind,
            attributes=clean,
            links=list(links),
            record_exception=False,
            set_status_on_exception=False,
        ) as live:
            handle = telemetry.Span(live)
            context = live.get_span_context()
            with bind_trace(f"{context.trace_id:032x}", f"{context.span_id:016x}", run.run_id if run else None):
                try:
                    yield handle
                except BaseException as error:  # re-raised once the span is closed: its message stays out
                    handle.error(error)
                    failure = error
        if failure is not None:
            raise failure

    def run_ended(self, run: RunRecord, *, step_count: int) -> None:
        """Write the run's root span, `invoke_agent {agent}`, from its start to its end (once, at the end)."""
        run_trace = RunTrace.parse(run.trace)
        if run_trace is None or run.ended_at is None:
            return
        parent = (
            trace.set_span_in_context(NonRecordingSpan(_span_context(run_trace, run_trace.parent_span_id)))
            if run_trace.parent_span_id
            else Context()
        )
        agent = run.agent or "agent"
        usage = run.usage or {}
        attributes: dict[str, telemetry.AttributeValue | None] = {
            "gen_ai.operation.name": telemetry.INVOKE_AGENT,
            "gen_ai.agent.name": agent,
            "gen_ai.conversation.id": run.conversation_id,
            "gen_ai.provider.name": run.provider or None,
            "gen_ai.request.model": run.model or None,
            "gen_ai.usage.input_tokens": _int(usage.get("inputTokens")),
            "gen_ai.usage.output_tokens": _int(usage.get("outputTokens")),
            "stepline.run_id": run.run_id,
            "stepline.outcome": run.status,
            "stepline.finish_reason": run.finish_reason,
            "stepline.step_count": step_count,
        }
        token = _PRESET.set((int(run_trace.trace_id, 16), int(run_trace.span_id, 16)))
        try:
            span = self.tracer.start_span(
                f"{telemetry.INVOKE_AGENT} {agent}",
                context=parent,
                kind=SpanKind.INTERNAL,
                attributes={k: v for k, v in attributes.items() if v is not None},
                start_time=_ms_to_ns(run.started_at),
            )
        finally:
            _PRESET.reset(token)
        if run.status == "failed":
            telemetry.Span(span).error(str((run.error or {}).get("code") or "run_failed"))
        span.end(end_time=_ms_to_ns(run.ended_at))

    def flush(self) -> None:
        """Export what is buffered now (a Lambda environment may be frozen right after it returns)."""
        self.provider.force_flush(timeout_millis=FLUSH_TIMEOUT_MS)
        if self.meter_provider is not None:
            self.meter_provider.force_flush(timeout_millis=FLUSH_TIMEOUT_MS)
        for extra in self._extra_flush:
            extra()

    def shutdown(self) -> None:
        self.provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
