"""The tracing setup: off imports nothing, OTLP reaches a real receiver, X-Ray's export is SigV4-signed."""

from __future__ import annotations

import gzip
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from botocore.credentials import Credentials
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from stepline.aws.otlp_sigv4 import signed_session, xray_traces_endpoint
from stepline.tracing.context import RunTrace
from stepline.tracing.setup import TracingSettingError, capture_content, telemetry_from_env, tracing_mode


class Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver on 127.0.0.1 that keeps what it is sent."""

    received: list[tuple[str, dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        Receiver.received.append((self.path, dict(self.headers.items()), body))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[str]:
    Receiver.received = []
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_tracing_off_builds_nothing_and_imports_no_opentelemetry() -> None:
    code = (
        "import sys\n"
        "from stepline.tracing.setup import telemetry_from_env\n"
        "assert telemetry_from_env({}, service='x') is None\n"
        "assert telemetry_from_env({'STEPLINE_TRACING': 'off'}, service='x') is None\n"
        "import stepline.runtime.handlers, stepline.runtime.worker\n"
        "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith('opentelemetry')}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_settings_from_the_environment() -> None:
    assert tracing_mode({}) == "off" and tracing_mode({"STEPLINE_TRACING": " XRay "}) == "xray"
    with pytest.raises(TracingSettingError, match="one of off, xray, otlp"):
        tracing_mode({"STEPLINE_TRACING": "jaeger"})
    assert not capture_content({})
    assert not capture_content({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"})
    for on in ("true", "SPAN_ONLY", "span_and_event"):
        assert capture_content({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": on})


def test_otlp_export_reaches_a_real_receiver(receiver: str) -> None:
    telemetry = telemetry_from_env(
        {"STEPLINE_TRACING": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver}, service="stepline-test"
    )
    assert telemetry is not None
    with telemetry.tracer.start_as_current_span("ModelStep"):
        pass
    telemetry.flush()
    telemetry.shutdown()
    traces = [body for path, _, body in Receiver.received if path == "/v1/traces"]
    assert traces, Receiver.received
    request = ExportTraceServiceRequest.FromString(traces[0])
    (resource,) = request.resource_spans
    service = {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
    assert service == "stepline-test"
    assert [s.name for s in resource.scope_spans[0].spans] == ["ModelStep"]


def test_the_xray_export_is_signed_for_xray_with_the_roles_credentials(receiver: str) -> None:
    assert xray_traces_endpoint("eu-west-1") == "https://xray.eu-west-1.amazonaws.com/v1/traces"
    session = signed_session("xray", "eu-west-1", Credentials("AKIDEXAMPLE", "secret-not-sent", "session-token"))
    body = gzip.compress(b"spans")
    session.post(
        f"{receiver}/v1/traces",
        data=body,
        headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"},
    )
    ((_, headers, sent),) = Receiver.received
    assert sent == body
    authorization = headers["Authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/xray/aws4_request" in authorization
    assert "content-encoding" in authorization.split("SignedHeaders=")[1]
    assert headers["X-Amz-Security-Token"] == "session-token"
    assert "secret-not-sent" not in str(headers)


def test_a_run_trace_round_trips_and_a_child_run_joins_its_parent_s_trace() -> None:
    run = RunTrace.new()
    assert RunTrace.parse(run.traceparent) == run
    child = run.child_of("00f067aa0ba902b7")
    assert child.trace_id == run.trace_id and child.span_id != run.span_id
    assert RunTrace.parse(child.traceparent) == child
    for bad in (None, "", "garbage", "00-" + "0" * 32 + "-00f067aa0ba902b7-01", "01-abc"):
        assert RunTrace.parse(bad) is None


def test_a_function_with_an_unknown_tracing_mode_fails_naming_the_variable() -> None:
    from stepline.aws.wiring import ConfigurationError, Settings

    base = {"STEPLINE_AGENT_TABLE": "agent", "STEPLINE_EVENTS_TABLE": "events", "STEPLINE_BUCKET": "bucket"}
    assert Settings.from_env(base).tracing == "off"
    assert Settings.from_env({**base, "STEPLINE_TRACING": "xray"}).tracing == "xray"
    with pytest.raises(ConfigurationError, match="STEPLINE_TRACING"):
        Settings.from_env({**base, "STEPLINE_TRACING": "jaeger"})
