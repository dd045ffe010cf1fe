"""One trace per run, on the real ASL (moto's interpreter) with an in-memory OTLP exporter.

A three-step turn: the model calls a tool that needs no approval, then one that does; the
approval is decided a day later (the services' clock is moved on, as a person coming back would
find it); the model then answers. Every function invocation the state machine made (three model
steps, the wait, the finalize), the API operations that started and decided the run, and the run's
root span written at its end share one trace id; names and attributes are checked against the
semantic-conventions package; no prompt, tool input or output is in any span unless content
capture is on, and then only masked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from stepline.llm.scripted import ScriptedModel
from stepline.runtime import waits
from stepline.tracing.context import RunTrace
from stepline.tracing.run_telemetry import PresetIds, RunTelemetry
from tests.support.local_aws import LocalAws, local_aws
from tests.support.runs import USER, Counted, begin, call_step, text_step, wait_for_token
from tests.support.semconv import metric_problems, span_problems

DAY_MS = 24 * 3600 * 1000
PROMPT = "What is the weather in Atlantis? My key is sk-abcdefghijklmnopqrstuvwx"
SECRET_PATH = "/srv/private/payroll.csv"
ANSWER = "It is sunny, and the payroll file is gone."
FUNCTIONS = ["ModelStep", "ModelStep", "AwaitInput", "ModelStep", "FinalizeRun"]


class Clock:
    """The services' clock: real time plus whatever the test moved it on by."""

    def __init__(self) -> None:
        import time

        self._time = time
        self.offset = 0

    def __call__(self) -> int:
        return int(self._time.time() * 1000) + self.offset


@dataclass
class Traced:
    aws: LocalAws
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    clock: Clock
    weather: Counted
    delete: Counted


@contextmanager
def traced_run(*, capture_content: bool) -> Iterator[Traced]:
    spans = InMemorySpanExporter()
    provider = TracerProvider(id_generator=PresetIds())
    provider.add_span_processor(SimpleSpanProcessor(spans))
    metrics = InMemoryMetricReader()
    telemetry = RunTelemetry(
        provider, meter_provider=MeterProvider(metric_readers=[metrics]), capture_content=capture_content
    )
    weather = Counted("get_weather", {"forecast": "sunny", "api_key": "k-live-123"})
    delete = Counted("delete_file", {"deleted": True})
    model = ScriptedModel.from_script(
        [
            call_step("get_weather", json.dumps({"city": "Atlantis"}), "c1"),
            call_step("delete_file", json.dumps({"path": SECRET_PATH}), "c2"),
            text_step(ANSWER),
        ]
    )
    clock = Clock()
    with local_aws(
        model,
        tools=[weather.tool, delete.tool],
        tool_approval={"delete_file": "user-approval"},
        approval_timeout_seconds=3 * 24 * 3600,
        telemetry=telemetry,
        clock=clock,
    ) as aws:
        yield Traced(aws, spans, metrics, clock, weather, delete)


def _run_to_the_end(traced: Traced) -> str:
    aws = traced.aws
    run_id = begin(aws, PROMPT)
    approval_id = wait_for_token(aws, "c2")
    traced.clock.offset = DAY_MS  # the person comes back the next day
    waits.decide(aws.services, USER, approval_id, approved=True, reason=None)
    assert aws.wait_execution(run_id) == "SUCCEEDED"
    return run_id


def _everything(spans: tuple[ReadableSpan, ...]) -> str:
    return json.dumps([{"name": s.name, "attributes": dict(s.attributes or {})} for s in spans], default=str)


def test_one_trace_across_every_invocation_and_the_decision_a_day_later() -> None:
    with traced_run(capture_content=False) as traced:
        run_id = _run_to_the_end(traced)
        run = traced.aws.services.store.get_run(USER, run_id)
        finished = traced.spans.get_finished_spans()
    run_trace = RunTrace.parse(run.trace)
    assert run_trace is not None
    strays = [
        (s.name, f"{s.context.trace_id:032x}")
        for s in finished
        if s.context and f"{s.context.trace_id:032x}" != run_trace.trace_id
    ]
    assert strays == [], f"spans outside the run's trace {run_trace.trace_id}: {strays}"
    by_id = {s.context.span_id: s for s in finished if s.context}
    (root,) = [s for s in finished if s.parent is None]
    assert root.name == "invoke_agent default" and f"{root.context.span_id:016x}" == run_trace.span_id  # type: ignore[union-attr]
    # The root spans the run as its clock saw it: from the start to an end a day later.
    assert root.end_time is not None and root.start_time is not None
    assert root.end_time - root.start_time >= DAY_MS * 1_000_000
    root_attributes = dict(root.attributes or {})
    assert (root_attributes["stepline.outcome"], root_attributes["stepline.step_count"]) == ("completed", 3)
    assert root_attributes["gen_ai.usage.input_tokens"] == 15  # the run's totals: 5 per step
    # Every invocation the state machine made, in order, each a child of the root (a remote parent).
    invocations = sorted((s for s in finished if s.kind == SpanKind.SERVER), key=lambda s: s.start_time or 0)
    assert [s.name for s in invocations] == FUNCTIONS
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in invocations)  # type: ignore[union-attr]
    assert all(s.parent is not None and s.parent.is_remote for s in invocations)
    requests = {s.name: s for s in finished if s.name.startswith("stepline.") and s.name != "stepline.step"}
    assert set(requests) == {"stepline.start_run", "stepline.decide_approval"}
    assert all(r.parent is not None and r.parent.span_id == root.context.span_id for r in requests.values())  # type: ignore[union-attr]
    decision = dict(requests["stepline.decide_approval"].attributes or {})
    assert (decision["stepline.approval.decision"], decision["stepline.resumed"]) == ("approved", True)
    # The step the decision resumed (in another process, a day later) links to the request that decided.
    resumed = invocations[3]
    assert [link.context.span_id for link in resumed.links] == [requests["stepline.decide_approval"].context.span_id]  # type: ignore[union-attr]
    assert dict(resumed.links[0].attributes or {}) == {"stepline.link": "decided"}
    assert all(not s.links for s in invocations if s is not resumed)
    # Inside each model step: the step, its model call, and the tools it ran.
    chats = [s for s in finished if s.name == "chat script"]
    tools = sorted(s.name for s in finished if s.name.startswith("execute_tool"))
    assert len(chats) == 3 and tools == ["execute_tool delete_file", "execute_tool get_weather"]
    for span in [*chats, *(s for s in finished if s.name.startswith("execute_tool"))]:
        step = by_id[span.parent.span_id]  # type: ignore[union-attr]
        assert step.name == "stepline.step" or step.name == "ModelStep"  # an approved tool runs before the step
        invocation = step if step.name == "ModelStep" else by_id[step.parent.span_id]  # type: ignore[union-attr]
        assert invocation.name == "ModelStep"
    assert (traced.weather.runs, traced.delete.runs) == (1, 1)
    assert span_problems(finished) == []
    text = _everything(finished)
    for private in ("Atlantis", SECRET_PATH, ANSWER, "sunny", "k-live-123", "sk-abcdefghijklmnopqrstuvwx"):
        assert private not in text, private


def test_content_capture_puts_the_prompt_in_the_spans_masked_and_the_metrics_follow_the_conventions() -> None:
    with traced_run(capture_content=True) as traced:
        _run_to_the_end(traced)
        finished = traced.spans.get_finished_spans()
        data = traced.metrics.get_metrics_data()
    assert span_problems(finished) == []
    first_chat = min((s for s in finished if s.name == "chat script"), key=lambda s: s.start_time or 0)
    assert "What is the weather in Atlantis?" in str(dict(first_chat.attributes or {})["gen_ai.input.messages"])
    text = _everything(finished)
    assert SECRET_PATH in text and "sunny" in text  # the approved tool's input, the first tool's output
    assert "sk-abcdefghijklmnopqrstuvwx" not in text and "k-live-123" not in text  # masked, always
    assert data is not None and metric_problems(data) == []
    names = {m.name for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
    assert names == {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"}
