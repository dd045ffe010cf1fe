"""A process's telemetry from its environment: off (nothing imported), X-Ray, or any OTLP backend.

    STEPLINE_TRACING=off      the default: no tracer, no exporter, OpenTelemetry never imported
    STEPLINE_TRACING=xray     OTLP/HTTP to X-Ray's OTLP traces endpoint, https://xray.<region>.amazonaws.com/v1/traces,
                              signed with the function's role (SigV4, `stepline.aws.otlp_sigv4`)
    STEPLINE_TRACING=otlp     OTLP/HTTP to the endpoint the standard variables name
                              (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
                              `OTEL_EXPORTER_OTLP_HEADERS`, `…_TIMEOUT`, read from the mapping given):
                              a collector, Jaeger, Honeycomb, Grafana…; the GenAI metrics go there too

Content capture follows the GenAI instrumentations' variable,
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` (`true`, `span_only` or `span_and_event`
turn it on; anything else leaves it off). `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` are
read by the SDK as usual; the service name defaults to the function's.

Spans are batched (`BatchSpanProcessor`); with `flush_each_invocation` (Lambda) every invocation
exports before it returns, since a frozen environment sends nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import unquote

if TYPE_CHECKING:
    from .run_telemetry import RunTelemetry

__all__ = ["MODES", "TracingMode", "capture_content", "telemetry_from_env", "tracing_mode"]

TracingMode = Literal["off", "xray", "otlp"]
MODES: Final = ("off", "xray", "otlp")
SCHEDULE_DELAY_MS: Final = 1000
"""How long spans wait in the batch before its thread exports them (`OTEL_BSP_SCHEDULE_DELAY`
overrides): a stream that stays open a second has sent the spans of the request that started it."""
EXPORT_TIMEOUT_SECONDS: Final = 3.0
"""How long one export may take, retries included (a Lambda invocation waits for it before it returns):
a backend that is down costs an invocation this much at most, and loses that invocation's spans."""
_CAPTURE: Final = frozenset({"true", "1", "span_only", "span_and_event"})


class TracingSettingError(ValueError):
    """`STEPLINE_TRACING` names no mode."""


def tracing_mode(env: Mapping[str, str]) -> TracingMode:
    """The mode the environment asks for (`off` when unset)."""
    value = (env.get("STEPLINE_TRACING") or "off").strip().lower()
    if value not in MODES:
        raise TracingSettingError(f"STEPLINE_TRACING must be one of {', '.join(MODES)}, not {value!r}")
    return value  # type: ignore[return-value]  # checked against MODES above


def capture_content(env: Mapping[str, str]) -> bool:
    """Whether spans carry message and tool content (off unless the conventions' variable asks)."""
    return (env.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") or "").strip().lower() in _CAPTURE


def telemetry_from_env(
    env: Mapping[str, str], *, service: str, flush_each_invocation: bool = False, region: str | None = None
) -> RunTelemetry | None:
    """The process's telemetry, or None when tracing is off (then nothing of OpenTelemetry is imported)."""
    mode = tracing_mode(env)
    if mode == "off":
        return None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from .run_telemetry import PresetIds, RunTelemetry

    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or service})
    provider = TracerProvider(resource=resource, id_generator=PresetIds())
    delay = int(env.get("OTEL_BSP_SCHEDULE_DELAY") or SCHEDULE_DELAY_MS)
    provider.add_span_processor(BatchSpanProcessor(_span_exporter(mode, env, region), schedule_delay_millis=delay))
    meter_provider: Any = _meter_provider(resource, env) if mode == "otlp" else None
    return RunTelemetry(
        provider,
        meter_provider=meter_provider,
        capture_content=capture_content(env),
        flush_each_invocation=flush_each_invocation,
    )


def _otlp_target(env: Mapping[str, str], signal: str) -> tuple[str, dict[str, str], float]:
    """(endpoint URL, headers, timeout in seconds) of one signal from the standard OTLP variables."""
    specific = env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    base = (env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "http://localhost:4318").rstrip("/")
    raw = env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    headers: dict[str, str] = {}
    for item in raw.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            headers[unquote(key.strip()).lower()] = unquote(value.strip())
    timeout = env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_TIMEOUT") or env.get("OTEL_EXPORTER_OTLP_TIMEOUT")
    seconds = float(timeout) / 1000 if timeout else EXPORT_TIMEOUT_SECONDS
    return specific or f"{base}/v1/{signal}", headers, seconds


def _span_exporter(mode: TracingMode, env: Mapping[str, str], region: str | None) -> Any:
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    if mode == "otlp":
        endpoint, headers, timeout = _otlp_target(env, "traces")
        return OTLPSpanExporter(endpoint=endpoint, headers=headers, timeout=timeout)
    from ..aws.otlp_sigv4 import signed_session, xray_traces_endpoint

    where = region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    return OTLPSpanExporter(
        endpoint=xray_traces_endpoint(where),
        session=signed_session("xray", where),
        compression=Compression.Gzip,
        timeout=EXPORT_TIMEOUT_SECONDS,
    )


def _meter_provider(resource: Any, env: Mapping[str, str]) -> Any:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    endpoint, headers, timeout = _otlp_target(env, "metrics")
    exporter = OTLPMetricExporter(endpoint=endpoint, headers=headers, timeout=timeout)
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=60_000)
    return MeterProvider(resource=resource, metric_readers=[reader])
