"""The discrete-event simulation: runs through the front door, Step Functions and Lambda, against the limits.

Each run is a sequence of events on one heap (seconds of simulated time):

- **arrive**: a watched run is `POST /api/chat` (API Gateway's bucket, a StreamFunction
  environment held for as long as the stream lasts) and each further watcher a `GET …/stream`; a
  headless run is a buffered request on ApiFunction. Then `StartExecution` (its bucket; a refusal
  is retried by the SDK at 0.5, 1, 2, 4 s, then the run is refused). A throttled request is retried
  by the client after 1 s, three times, then the run (or that watcher) is refused.
- **step**: the ModelStep state is entered (a StateTransition token: throttled transitions *wait*,
  which is queueing added to time to first token), then the ModelStep Lambda starts: warm, cold
  (init time, and the provider key read from SSM at its rate) or throttled, which the ASL retries
  at 2, 4, 8, 16, 32, 64 s (each retry a billed transition) before the run fails.
- **step end**: Route's transition, the step-end writes; then the next step, an approval wait
  (AwaitInput; the streams end, as the stock client's do; the decision is `SendTaskSuccess`, and a
  watched run's continuation is a new `POST /api/chat`), or the end (FinalizeRun, which ends the execution).

What happens many times a second per run (event-log appends, publishes, deliveries, stream reads)
is a fluid (bench/scale/meters.py: each step's streaming interval spread over 1-second ticks, at
the rates of today's code: a chat's 100 ms delta window or a headless run's 1 s, one Event API
publish per step's burst of appends while watched and none per append when not, a following
stream's fast polls); the report
compares every tick's demand with the tables', GSI2's shards' and the Event API's capacity
afterwards. Throttles there are counted, not fed back into the runs (a first-order model: any is
a design that does not hold). Seeded: one seed, one replay.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.scale.limits import Quotas
from bench.scale.meters import Meters, coalesced_publishes, poll_reads_per_s, shard_of
from bench.scale.models import Lambda, TokenBucket
from bench.scale.workload import Design, RunShape, Workload, draw_run

__all__ = ["Result", "simulate"]

MODEL_STEP, STREAM, API, SMALL = "ModelStep", "StreamFunction", "ApiFunction", "workers"
ASL_RETRIES = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
SDK_RETRIES = (0.5, 1.0, 2.0, 4.0)
CLIENT_RETRIES = 3


@dataclass
class Result:
    runs: int = 0
    completed: int = 0
    failed: int = 0
    refused: int = 0
    watchers_refused: int = 0
    throttles: dict[str, int] = field(default_factory=dict[str, int])
    first_ttft_added: list[float] = field(default_factory=list[float])
    step_ttft_added: list[float] = field(default_factory=list[float])
    transitions: int = 0
    lambda_requests: dict[str, int] = field(default_factory=dict[str, int])
    gb_seconds: dict[str, float] = field(default_factory=dict[str, float])
    api_requests: int = 0
    eventbridge_events: int = 0
    stream_seconds: float = 0.0
    provisioned_gb_s: float = 0.0
    """Provisioned concurrency configured, in GB-s, for as long as runs arrive (billed whether used or not)."""
    open_streams: int = 0
    open_streams_peak: int = 0
    lam: Lambda | None = None
    meters: Meters | None = None

    def throttle(self, name: str) -> None:
        self.throttles[name] = self.throttles.get(name, 0) + 1


@dataclass
class _Run:
    shape: RunShape
    arrived: float
    shard: int = 0
    """Its GSI2 `RUNS#active#nn` shard (the store's hash of a run id)."""
    step: int = 0
    attempt: int = 0
    ready: float = 0.0
    streams: int = 0
    opened: float = 0.0


class _Sim:
    def __init__(self, work: Workload, design: Design, quotas: Quotas, seed: int) -> None:
        self.work, self.design, self.q = work, design, quotas
        self.rng = random.Random(seed)
        self.seed, self.arrivals = seed, 0
        self.heap: list[tuple[float, int, Callable[[float], None]]] = []
        self.n = 0
        self.r = Result()
        self.lam = Lambda(quotas.lambda_concurrency, quotas.lambda_scaling_per_10s)
        self.lam.function(MODEL_STEP, quotas.reserved_model_step).idle = quotas.provisioned_model_step
        self.lam.function(STREAM).idle = quotas.provisioned_stream
        self.r.provisioned_gb_s = work.duration_s * (
            quotas.provisioned_model_step * design.model_step_gb + quotas.provisioned_stream * design.stream_gb
        )
        self.start = TokenBucket(quotas.sfn_start_rate, quotas.sfn_start_bucket)
        self.transition = TokenBucket(quotas.sfn_transition_rate, quotas.sfn_transition_bucket)
        self.send_task = TokenBucket(quotas.sfn_send_task_rate, quotas.sfn_send_task_bucket)
        self.apigw = TokenBucket(quotas.apigw_rate, quotas.apigw_burst)
        self.ssm = TokenBucket(quotas.ssm_rate, quotas.ssm_rate)
        self.secrets = TokenBucket(quotas.secrets_rate, quotas.secrets_rate)
        self.eventbridge = TokenBucket(quotas.eventbridge_rate, quotas.eventbridge_rate)
        horizon = int(work.duration_s + 900)
        self.m = Meters(horizon)
        self.r.lam, self.r.meters = self.lam, self.m

    # -- plumbing ---------------------------------------------------------------------------------

    def at(self, when: float, action: Callable[[float], None]) -> None:
        self.n += 1
        heapq.heappush(self.heap, (when, self.n, action))

    def run(self) -> Result:
        self._schedule_arrivals()
        while self.heap:
            when, _, action = heapq.heappop(self.heap)
            action(when)
        return self.r

    def _schedule_arrivals(self) -> None:
        """Poisson arrivals at `arrival_rate`, thinned to the linear ramp while it lasts."""
        w, t = self.work, 0.0
        while True:
            t += self.rng.expovariate(w.arrival_rate)
            if t >= w.duration_s:
                return
            if w.ramp_s > 0 and t < w.ramp_s and self.rng.random() >= t / w.ramp_s:
                continue
            shape = draw_run(self.rng, w)
            self.arrivals += 1
            shard = shard_of(f"run_{self.seed}_{self.arrivals:09d}")
            self.at(t, lambda now, s=shape, n=shard: self._arrive(now, _Run(s, now, n, ready=now)))

    def _invoke(self, now: float, name: str, gb: float, seconds: float) -> str | None:
        kind = self.lam.acquire(now, name)
        if kind is None:
            self.r.throttle(f"Lambda {name}")
            return None
        self.r.lambda_requests[name] = self.r.lambda_requests.get(name, 0) + 1
        self.r.gb_seconds[name] = self.r.gb_seconds.get(name, 0.0) + gb * seconds
        if seconds > 0:
            self.at(now + seconds, lambda _now: self.lam.release(name))
        return kind

    def _small(self, now: float) -> float:
        """A small worker task (its transition and invocation); the seconds it takes."""
        wait = self._transition(now)
        kind = self._invoke(now + wait, SMALL, self.design.small_gb, self.design.small_s)
        return wait + self.design.small_s + (self.design.cold_small_s if kind == "cold" else 0.0)

    def _transition(self, now: float) -> float:
        self.r.transitions += 1
        wait = self.transition.reserve(now)
        if wait > 0:
            self.r.throttle("StateTransition (waited)")
        return wait

    # -- the front door ---------------------------------------------------------------------------

    def _open_stream(self, now: float, run: _Run, tries: int = 0) -> bool | None:
        """One SSE connection: True open, None retry scheduled by the caller, False refused."""
        self.r.api_requests += 1
        if not self.apigw.take(now):
            self.r.throttle("API Gateway")
            return None if tries < CLIENT_RETRIES else False
        kind = self.lam.acquire(now, STREAM)
        if kind is None:
            self.r.throttle(f"Lambda {STREAM}")
            return None if tries < CLIENT_RETRIES else False
        self.r.lambda_requests[STREAM] = self.r.lambda_requests.get(STREAM, 0) + 1
        run.streams += 1
        self.r.open_streams += 1
        self.r.open_streams_peak = max(self.r.open_streams_peak, self.r.open_streams)
        return True

    def _close_streams(self, now: float, run: _Run) -> None:
        for _ in range(run.streams):
            self.lam.release(STREAM)
        held = (now - run.opened) * run.streams
        self.r.stream_seconds += held
        self.r.gb_seconds[STREAM] = self.r.gb_seconds.get(STREAM, 0.0) + self.design.stream_gb * held
        self.r.open_streams -= run.streams
        run.streams = 0

    def _arrive(self, now: float, run: _Run, tries: int = 0) -> None:
        if tries == 0:
            self.r.runs += 1
        if run.shape.watchers == 0:
            self.r.api_requests += 1
            if not self.apigw.take(now) or self._invoke(now, API, 0.5, self.design.api_s) is None:
                self._retry_or_refuse(now, run, tries, self._arrive)
                return
        else:
            opened = self._open_stream(now, run, tries)
            if not opened:
                if opened is None:
                    self.at(now + 1.0, lambda t: self._arrive(t, run, tries + 1))
                else:
                    self.r.refused += 1
                return
            run.opened = now
            for _ in range(run.shape.watchers - 1):
                self._watch(now, run, 0)
        self._start_execution(now, run, 0)

    def _retry_or_refuse(self, now: float, run: _Run, tries: int, again: Callable[[float, _Run, int], None]) -> None:
        if tries < CLIENT_RETRIES:
            self.at(now + 1.0, lambda t: again(t, run, tries + 1))
        else:
            self.r.refused += 1

    def _watch(self, now: float, run: _Run, tries: int) -> None:
        opened = self._open_stream(now, run, tries)
        if opened is None:
            self.at(now + 1.0, lambda t: self._watch(t, run, tries + 1))
        elif not opened:
            self.r.watchers_refused += 1

    def _start_execution(self, now: float, run: _Run, tries: int) -> None:
        if not self.start.take(now):
            self.r.throttle("StartExecution")
            if tries < len(SDK_RETRIES):
                self.at(now + SDK_RETRIES[tries], lambda t: self._start_execution(t, run, tries + 1))
            else:
                self.r.refused += 1
                self._close_streams(now, run)
            return
        self.m.at(self.m.agent_wcu, now, self.design.turn_start_wcu)
        self.m.gsi2(now, run.shard, self.design.gsi2_units_per_write)
        self._lifecycle(now)
        self.at(now, lambda t: self._step(t, run))

    def _lifecycle(self, now: float) -> None:
        self.r.eventbridge_events += 1
        if not self.eventbridge.take(now):
            self.r.throttle("EventBridge PutEvents")

    # -- the state machine ------------------------------------------------------------------------

    def _step(self, now: float, run: _Run) -> None:
        wait = self._transition(now)
        self.at(now + wait, lambda t: self._model_step(t, run))

    def _model_step(self, now: float, run: _Run) -> None:
        s, d = run.shape, self.design
        kind = self.lam.acquire(now, MODEL_STEP)
        if kind is None:
            self.r.throttle(f"Lambda {MODEL_STEP}")
            if run.attempt < len(ASL_RETRIES):
                delay = ASL_RETRIES[run.attempt]
                run.attempt += 1
                self.at(now + delay, lambda t: self._step(t, run))
            else:
                self._fail(now, run)
            return
        run.attempt = 0
        init = 0.0
        if kind == "cold":
            init = d.cold_model_step_s
            if not self.ssm.take(now):
                self.r.throttle("SSM GetParameter (cold start)")
                init += 1.0  # the SDK's retry of a throttled read, roughly
            if not self.secrets.take(now):
                self.r.throttle("Secrets Manager GetSecretValue")
        i = run.step
        begin = now + init
        added = begin - run.ready
        (self.r.first_ttft_added if i == 0 else self.r.step_ttft_added).append(added)
        first = begin + s.ttft_s[i]
        end = first + s.stream_s[i] + s.tool_s[i]
        self.r.lambda_requests[MODEL_STEP] = self.r.lambda_requests.get(MODEL_STEP, 0) + 1
        # A run nobody follows takes its steps after the first on the unwatched function (less memory);
        # its environments are counted in ModelStep's pool (one pool scales no faster than two).
        gb = d.model_step_gb if s.watchers > 0 or i == 0 else d.unwatched_model_step_gb
        self.r.gb_seconds[MODEL_STEP] = self.r.gb_seconds.get(MODEL_STEP, 0.0) + gb * (end - now)
        self._stream_meters(first, first + s.stream_s[i], s.watchers)
        m = self.m
        m.at(m.agent_rcu, now, d.step_start_rcu)
        m.at(m.events_wcu, end, d.boundary_wcu_per_step)
        m.at(m.publishes, end, d.boundary_publishes_per_step)
        m.at(m.deliveries, end, d.boundary_publishes_per_step * s.watchers)
        m.s3_puts += d.s3_puts_per_step
        m.s3_gets += d.s3_gets_per_step
        if s.tool_s[i] > 0:
            m.at(m.agent_wcu, end, d.tool_wcu)
        self.at(end, lambda t: self._step_end(t, run))

    def _stream_meters(self, start: float, end: float, watchers: int) -> None:
        """A step's streaming interval: delta batches at the run's window, coalesced publishes, polls."""
        d, m = self.design, self.m
        seconds = end - start
        if seconds <= 0:
            return
        window = d.window_s(watchers > 0)
        m.spread(m.streaming, start, end, 1.0)
        m.spread(m.events_wcu, start, end, d.appends_per_s(watchers > 0) * d.wcu_per_append)
        if watchers > 0:  # a run nobody follows publishes nothing per append (only its step ends)
            publishes = coalesced_publishes(seconds, window, d.push_window_s) / seconds
            m.spread(m.publishes, start, end, publishes)
            agent, events = poll_reads_per_s(d.poll_seconds)
            m.spread(m.deliveries, start, end, watchers * publishes)
            m.spread(m.agent_rcu, start, end, watchers * agent)
            m.spread(m.events_rcu, start, end, watchers * events)

    def _step_end(self, now: float, run: _Run) -> None:
        self.lam.release(MODEL_STEP)
        s, d = run.shape, self.design
        self.m.at(self.m.agent_wcu, now, d.step_end_wcu)
        self.m.gsi2(now, run.shard, d.gsi2_units_per_write)
        route = self._transition(now)
        run.step += 1
        if run.step >= s.steps:
            self._end(now + route, run)
        elif run.step == s.approval_after:
            took = self._small(now + route)  # AwaitInput
            self._close_streams(now, run)
            self._lifecycle(now)
            self.at(now + route + took + s.approval_wait_s, lambda t: self._decide(t, run, 0))
        else:
            run.ready = now + route
            self.at(now + route, lambda t: self._step(t, run))

    def _decide(self, now: float, run: _Run, tries: int) -> None:
        self.r.api_requests += 1
        if not self.apigw.take(now) or self._invoke(now, API, 0.5, self.design.api_s) is None:
            self._retry_or_refuse(now, run, tries, self._decide)
            return
        if not self.send_task.take(now):
            self.r.throttle("SendTaskSuccess")
        run.ready = now
        if run.shape.watchers > 0:
            run.opened = now
            for _ in range(run.shape.watchers):
                self._watch(now, run, 0)
        self.at(now, lambda t: self._step(t, run))

    def _end(self, now: float, run: _Run) -> None:
        took = self._small(now)  # FinalizeRun: the execution's last state
        self.m.at(self.m.agent_wcu, now + took, self.design.end_wcu)
        self.m.gsi2(now + took, run.shard, self.design.gsi2_units_per_write)
        self._lifecycle(now + took)
        self._close_streams(now + took, run)
        self.r.completed += 1

    def _fail(self, now: float, run: _Run) -> None:
        self._small(now)  # FailRun
        self.r.transitions += 1
        self._close_streams(now, run)
        self.r.failed += 1


def simulate(work: Workload, design: Design, quotas: Quotas, seed: int = 1) -> Result:
    """Replay `work` against `quotas` with `design`; seeded, so one seed gives one result."""
    return _Sim(work, design, quotas, seed).run()
