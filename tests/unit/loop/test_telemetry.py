"""OpenTelemetry spans: names, nesting, attributes; nothing sensitive; off without a tracer."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from stepline.loop import telemetry
from stepline.loop.approval import ApprovalDecision
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import StreamTextResult, stream_text
from stepline.loop.tools import Tool
from tests.support.semconv import metric_problems, span_problems

from .support import FakeSleep, call, collect, finish, model, run, text, text_step, tool_step

PROMPT = "SECRET-PROMPT: what is the weather in Atlantis?"
TOOL_OUTPUT = "SECRET-OUTPUT: 42 degrees"
TOOL_INPUT_CITY = "SECRET-INPUT-Atlantis"
APPROVAL_SECRET = b"SECRET-HMAC-KEY"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.clear()


def _tracer(exporter: InMemorySpanExporter) -> Any:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("stepline-tests")


def _weather(args: Any) -> str:
    return TOOL_OUTPUT


def _failing(args: Any) -> str:
    raise RuntimeError("SECRET-ERROR-MESSAGE")


def _run_traced(exporter: InMemorySpanExporter, scripted: Any, **options: Any) -> StreamTextResult:
    async def scenario() -> StreamTextResult:
        result = stream_text(model=scripted, tracer=_tracer(exporter), run_id="run-7", sleep=FakeSleep(), **options)
        await collect(result)
        return result

    return run(scenario)


def _by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return sorted((s for s in spans if s.name == name), key=lambda s: s.start_time or 0)


def _parent(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def _two_step_run(exporter: InMemorySpanExporter) -> tuple[ReadableSpan, ...]:
    scripted = model(
        {"raise": {"kind": "server", "status": 503}},
        [*call("c1", "weather", f'{{"city":"{TOOL_INPUT_CITY}"}}'), *call("c2", "broken"), finish("tool-calls")],
        [*text("t", "It is warm."), finish(input_tokens=30, output_tokens=4)],
    )
    result = _run_traced(
        exporter,
        scripted,
        prompt=PROMPT,
        instructions="SECRET-SYSTEM",
        tools=[Tool(name="weather", execute=_weather), Tool(name="broken", execute=_failing)],
        stop_when=is_step_count(3),
        approval_secret=APPROVAL_SECRET,
    )
    assert result.error is None
    return exporter.get_finished_spans()


RUN = "invoke_agent agent"
STEP = telemetry.STEP
CHAT = "chat script"


def _tools(spans: tuple[ReadableSpan, ...]) -> list[ReadableSpan]:
    return sorted((s for s in spans if s.name.startswith("execute_tool ")), key=lambda s: s.start_time or 0)


def test_span_names_and_nesting(exporter: InMemorySpanExporter) -> None:
    spans = _two_step_run(exporter)
    (run_span,) = _by_name(spans, RUN)
    steps = _by_name(spans, STEP)
    calls = _by_name(spans, CHAT)
    tools = _tools(spans)
    assert len(spans) == 1 + 2 + 3 + 2
    assert _parent(run_span) is None
    assert [_parent(s) for s in steps] == [_id(run_span)] * 2
    # Two attempts in step 0 (a 503, then success), one in step 1.
    assert [_parent(c) for c in calls] == [_id(steps[0]), _id(steps[0]), _id(steps[1])]
    assert [_parent(t) for t in tools] == [_id(steps[0])] * 2
    assert sorted(t.name for t in tools) == ["execute_tool broken", "execute_tool weather"]
    assert all(s.context is not None and s.context.trace_id == run_span.context.trace_id for s in spans)  # type: ignore[union-attr]
    assert {c.kind for c in calls} == {SpanKind.CLIENT}


def test_every_name_and_attribute_is_in_the_conventions(exporter: InMemorySpanExporter) -> None:
    spans = _two_step_run(exporter)
    assert span_problems(spans) == []
    operations = {dict(s.attributes or {}).get("gen_ai.operation.name") for s in spans}
    assert operations == {"invoke_agent", "chat", "execute_tool", None}  # None: the step spans


def test_span_attributes(exporter: InMemorySpanExporter) -> None:
    spans = _two_step_run(exporter)
    (run_span,) = _by_name(spans, RUN)
    assert dict(run_span.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "agent",
        "stepline.run_id": "run-7",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "script",
        "stepline.outcome": "finished",
        "stepline.finish_reason": "stop",
        "stepline.step_count": 2,
    }
    steps = _by_name(spans, STEP)
    assert [dict(s.attributes or {}) for s in steps] == [
        {
            "stepline.run_id": "run-7",
            "stepline.step_number": 0,
            "stepline.outcome": "continue",
            "stepline.finish_reason": "tool-calls",
        },
        {
            "stepline.run_id": "run-7",
            "stepline.step_number": 1,
            "stepline.outcome": "finished",
            "stepline.finish_reason": "stop",
        },
    ]
    failed, first, second = (dict(s.attributes or {}) for s in _by_name(spans, CHAT))
    request = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "script",
        "gen_ai.output.type": "text",
        "stepline.step_number": 0,
    }
    assert failed == {**request, "stepline.attempt": 0, "error.type": "ModelCallError"}
    assert first == {
        **request,
        "stepline.attempt": 1,
        "gen_ai.response.finish_reasons": ("tool-calls",),
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
    }
    assert (second["stepline.attempt"], second["gen_ai.usage.input_tokens"]) == (0, 30)
    tools = {s.attributes["gen_ai.tool.name"]: dict(s.attributes) for s in _tools(spans) if s.attributes}
    common = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.type": "function", "stepline.run_id": "run-7"}
    assert tools == {
        "weather": {
            **common,
            "gen_ai.tool.name": "weather",
            "gen_ai.tool.call.id": "c1",
            "stepline.step_number": 0,
            "stepline.tool.error": False,
        },
        "broken": {
            **common,
            "gen_ai.tool.name": "broken",
            "gen_ai.tool.call.id": "c2",
            "stepline.step_number": 0,
            "stepline.tool.error": True,
            "error.type": "tool_error",
        },
    }


def test_content_capture_is_opt_in_and_masked(exporter: InMemorySpanExporter) -> None:
    scripted = model(
        [*call("c1", "weather", '{"city":"Atlantis","api_key":"k-123"}'), finish("tool-calls")],
        [*text("t", "Key sk-abcdefghijklmnopqrstuvwx leaked"), finish()],
    )
    _run_traced(
        exporter,
        scripted,
        prompt="weather? my key is sk-abcdefghijklmnopqrstuvwx",
        instructions="Be brief.",
        tools=[Tool(name="weather", execute=_weather)],
        stop_when=is_step_count(3),
        trace_content=True,
    )
    spans = exporter.get_finished_spans()
    assert span_problems(spans) == []
    first, second = _by_name(spans, CHAT)
    attributes = dict(first.attributes or {})
    assert "weather?" in str(attributes["gen_ai.input.messages"])
    assert "Be brief." in str(attributes["gen_ai.system_instructions"])
    assert '"name":"weather"' in str(attributes["gen_ai.tool.definitions"])
    assert "tool_call" in str(attributes["gen_ai.output.messages"])
    assert "leaked" in str(dict(second.attributes or {})["gen_ai.output.messages"])
    (tool,) = _tools(spans)
    assert "Atlantis" in str(dict(tool.attributes or {})["gen_ai.tool.call.arguments"])
    assert TOOL_OUTPUT in str(dict(tool.attributes or {})["gen_ai.tool.call.result"])
    everything = "\n".join(_all_text(s) for s in spans)
    assert "sk-abcdefghijklmnopqrstuvwx" not in everything and "k-123" not in everything


def test_gen_ai_metrics_per_model_call() -> None:
    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("stepline-tests")
    scripted = model(
        {"raise": {"kind": "server", "status": 503}}, [*text("t", "hi"), finish(input_tokens=7, output_tokens=3)]
    )

    async def scenario() -> None:
        await collect(stream_text(model=scripted, meter=meter, prompt="x", sleep=FakeSleep()))

    run(scenario)
    data = reader.get_metrics_data()
    assert data is not None
    assert metric_problems(data) == []
    metrics = {m.name: m for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
    assert set(metrics) == {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"}
    tokens = {
        dict(p.attributes or {})["gen_ai.token.type"]: p.sum
        for p in metrics["gen_ai.client.token.usage"].data.data_points
    }
    assert tokens == {"input": 7, "output": 3}
    durations = metrics["gen_ai.client.operation.duration"].data.data_points
    assert sorted(p.count for p in durations) == [1, 1]  # the failed attempt (with error.type) and the good one
    assert {dict(p.attributes or {}).get("error.type") for p in durations} == {"ModelCallError", None}


def _all_text(span: ReadableSpan) -> str:
    values = [str(v) for v in (span.attributes or {}).values()]
    values += [str(v) for e in span.events for v in (e.attributes or {}).values()]
    values.append(span.name)
    return "\n".join(values)


def test_no_span_records_prompt_text_tool_input_or_output_or_secrets(exporter: InMemorySpanExporter) -> None:
    spans = _two_step_run(exporter)
    assert spans
    for span in spans:
        everything = _all_text(span)
        assert "SECRET" not in everything, (span.name, everything)


def test_approval_pause_and_resumed_tool_spans(exporter: InMemorySpanExporter) -> None:
    tools = [Tool(name="delete", execute=lambda _: TOOL_OUTPUT)]
    paused = _run_traced(
        exporter,
        model(tool_step(call("c1", "delete", '{"path":"SECRET-PATH"}'))),
        prompt=PROMPT,
        tools=tools,
        tool_approval={"delete": "user-approval"},
        approval_secret=APPROVAL_SECRET,
    )
    (run_span,) = _by_name(exporter.get_finished_spans(), RUN)
    assert run_span.attributes is not None and run_span.attributes["stepline.outcome"] == "await-approval"
    exporter.clear()

    pending = paused.state.pending_approvals[0]
    _run_traced(
        exporter,
        model(text_step("done")),
        state=paused.state,
        approval_decisions=[
            ApprovalDecision(approval_id=pending.approval_id, approved=True, signature=pending.signature)
        ],
        tools=tools,
        tool_approval={"delete": "user-approval"},
        approval_secret=APPROVAL_SECRET,
    )
    spans = exporter.get_finished_spans()
    (run_span,) = _by_name(spans, RUN)
    (tool_span,) = _tools(spans)
    assert _parent(tool_span) == _id(run_span)  # the approved call runs before any step
    assert all("SECRET" not in _all_text(s) for s in spans)


def test_a_failed_run_and_an_aborted_run(exporter: InMemorySpanExporter) -> None:
    _run_traced(
        exporter, model({"raise": {"kind": "auth", "status": 401, "message": "SECRET-KEY rejected"}}), prompt="x"
    )
    spans = exporter.get_finished_spans()
    (step,) = _by_name(spans, STEP)
    assert step.attributes is not None
    assert (step.attributes["stepline.outcome"], step.attributes["stepline.error_code"]) == ("failed", "auth")
    (call_span,) = _by_name(spans, CHAT)
    assert call_span.attributes is not None and call_span.attributes["error.type"] == "ModelCallError"
    assert all("SECRET" not in _all_text(s) for s in spans)
    exporter.clear()

    import asyncio

    from stepline.loop.config import AbortSignal

    signal = AbortSignal()

    async def stop(args: Any) -> str:
        signal.abort()
        await asyncio.Event().wait()
        return "never"

    _run_traced(
        exporter, model(tool_step(call("c1", "t"))), prompt="x", tools=[Tool(name="t", execute=stop)], abort=signal
    )
    spans = exporter.get_finished_spans()
    (run_span,) = _by_name(spans, RUN)
    assert run_span.attributes is not None and run_span.attributes["stepline.outcome"] == "aborted"
    (tool_span,) = _tools(spans)
    assert tool_span.attributes is not None and tool_span.attributes["error.type"] == "CancelledError"


def test_no_tracer_means_no_spans_and_no_cost() -> None:
    with telemetry.span(None, RUN, {"a": 1}) as span:
        span.set("b", 2)
        span.error(ValueError("x"))
    scripted = model(text_step("hi"))

    async def scenario() -> StreamTextResult:
        result = stream_text(model=scripted, prompt="x")
        await collect(result)
        return result

    assert run(scenario).error is None


def test_the_span_helper_with_a_duck_typed_tracer() -> None:
    recorded: list[tuple[str, Any]] = []

    class FakeSpan:
        def set_attribute(self, key: str, value: Any) -> None:
            recorded.append((key, value))

        def set_status(self, status: Any) -> None:
            recorded.append(("status", status.status_code.name))

    class FakeTracer:
        def start_as_current_span(self, name: str, attributes: Any, **options: Any) -> Any:
            from contextlib import nullcontext

            recorded.append((name, attributes))
            return nullcontext(FakeSpan())

    with pytest.raises(KeyError), telemetry.span(FakeTracer(), "n", {"k": "v", "unknown": None}) as span:
        span.set("later", 3)
        span.set("skipped", None)
        raise KeyError("boom")
    assert recorded == [("n", {"k": "v"}), ("later", 3), ("error.type", "KeyError"), ("status", "ERROR")]


def test_the_loop_does_not_import_opentelemetry() -> None:
    code = (
        "import sys, stepline.loop.stream_text, stepline.loop.telemetry\n"
        "print(any(m.split('.')[0] == 'opentelemetry' for m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_conventions_check_catches_what_it_should(exporter: InMemorySpanExporter) -> None:
    tracer = _tracer(exporter)
    with tracer.start_as_current_span("chat wrong", attributes={"gen_ai.operation.name": "chat", "gen_ai.system": "x"}):
        pass
    with tracer.start_as_current_span("x", attributes={"gen_ai.made_up": 1, "gen_ai.operation.name": "chatting"}):
        pass
    problems = span_problems(exporter.get_finished_spans())
    assert any("gen_ai.system is deprecated" in p for p in problems)
    assert any("is named 'chat None'" in p for p in problems)
    assert any("gen_ai.made_up is not a semantic-convention attribute" in p for p in problems)
    assert any("'chatting' is not a GenAI operation" in p for p in problems)
