"""Stream latency inside one process: a token to the client's SSE event, durable path and direct.

    .venv/bin/python bench/stream_latency.py [--quick] [--deltas N] [--interval-ms MS] [--no-gc-freeze]

What this is not: what a user runs. The server, moto, the worker and the client all run in THIS
process, and by default its warm heap is frozen (`gc.freeze()`) before each measured run, which
removes the garbage collector's pauses over that heap; it also knows when the model yielded each
delta, so it splits the latency into its parts. For the figures a user sees, `stepline dev` as a
subprocess against the AI SDK's own server on the same script, run `bench/ttft.py`.

A paced model (this file) streams one text part of N deltas (1,000; 200 with `--quick`), one every
`--interval-ms` (3 ms) on a fixed schedule. Delta i carries its index (`d0017 `), and the model
records `time.perf_counter()` just before it yields it. Latency of a delta = the time the client has
parsed the event that carries it − that yield time. Everything runs in this one process.

- direct: `stream_text(model=..., prompt=...)` in process, reading `ui_message_stream()`; each
  `text-delta` chunk is also SSE-encoded (`encode_chunk`) before it is timed, to be fair about
  serialisation.
- durable: the local runtime as `stepline dev` builds it (`local_backend` + `create_app`, as in
  `stepline.local.dev.dev_server`, but with the paced model object): DynamoDB, S3 and the real ASL on
  moto, the worker handlers in process, the FastAPI app served by uvicorn on a free port in a
  thread. The client (httpx, main thread) POSTs `/api/chat` with DefaultChatTransport's body and
  parses the SSE as it arrives (`SseDecoder`). A delta travels model → loop → `RunRecorder` →
  `EventBatcher` (a batch is written once `delta_window` has passed since the last one) → DynamoDB
  → the API's tail (it reads the run every `poll_seconds`, and the log when the run has grown) → SSE.
  Two configurations: the defaults (150 ms window, 100 ms poll) and a tuned one (20 ms, 20 ms).

Each path is warmed up with a short run first (imports, moto, the first execution); then one
measured run each, the warm heap frozen first (see `GcPauses`; `--no-gc-freeze` to leave it).
Printed per path: p50/p90/p99/max latency over the N deltas, how late the model yielded behind its
schedule (a blocked event loop delays the model itself: that time is not in the latency), the
longest GC pause, the stream's duration, and for the durable path the events written and SSE frames
received; then the durable/direct ratios, and where the durable latency goes: held in the batcher
(yield → `append_events` called), the write itself, and written → client (the tail's poll, its
read, the HTTP hop), from a pass-through wrapper around the store. Figures only; no assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import re
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn

from stepline.api.app import create_app
from stepline.api.deps import ApiOptions
from stepline.api.identity import DEFAULT_LOCAL_USER, DevTokens
from stepline.llm.base import ModelCallOptions, ModelCapabilities
from stepline.llm.stream_parts import ModelStreamPart, parse_stream_part
from stepline.local.backend import LocalBackend, local_backend
from stepline.local.dev import DEFAULT_TOOLS
from stepline.loop.stream_text import stream_text
from stepline.protocol._json import loads_strict
from stepline.protocol.chunks import TextDeltaChunk
from stepline.protocol.sse import SseDecoder, encode_chunk
from stepline.runtime.services import Services
from stepline.store.event_batcher import DEFAULT_WINDOW
from stepline.tools import load_toolset

INDEX = re.compile(r"d(\d+) ")
PROMPT = "Stream a long answer, please."
WARM_UP_DELTAS = 50


# --- the model ------------------------------------------------------------------------------------


@dataclass
class PacedModel:
    """One text part of `deltas` deltas, one every `interval` seconds on a fixed schedule.

    A model's tokens arrive on their own schedule: when the consumer is busy, the next one is
    yielded at once (late), not a full interval after the previous one.
    """

    deltas: int
    interval: float
    provider: str = "bench"
    model_id: str = "paced"
    capabilities: ModelCapabilities = field(default_factory=ModelCapabilities)
    yielded: dict[int, float] = field(default_factory=dict[int, float])
    late: dict[int, float] = field(default_factory=dict[int, float])
    _parts: list[ModelStreamPart] = field(default_factory=list[ModelStreamPart])

    def __post_init__(self) -> None:
        self.prepare(self.deltas)

    def prepare(self, deltas: int) -> None:
        """Build the parts up front (pydantic construction is not part of what is measured)."""
        width = max(4, len(str(deltas - 1)))
        self.deltas = deltas
        self._parts = [
            parse_stream_part({"type": "text-delta", "id": "t1", "delta": f"d{i:0{width}} "}) for i in range(deltas)
        ]
        self.yielded.clear()
        self.late.clear()

    async def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        yield parse_stream_part({"type": "stream-start", "warnings": []})
        yield parse_stream_part({"type": "text-start", "id": "t1"})
        start = time.perf_counter()
        for index, part in enumerate(self._parts):
            due = start + (index + 1) * self.interval
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            now = time.perf_counter()
            self.late[index] = now - due
            self.yielded[index] = now
            yield part
        yield parse_stream_part({"type": "text-end", "id": "t1"})
        usage = {"inputTokens": {"total": 10, "noCache": 10}, "outputTokens": {"total": self.deltas}}
        yield parse_stream_part({"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": usage})


# --- measurements ---------------------------------------------------------------------------------


@dataclass
class Measured:
    name: str
    latencies: list[float]
    late: list[float]
    stream_seconds: float
    events: Counter[str] | None = None
    frames: int | None = None
    segments: dict[str, list[float]] = field(default_factory=dict[str, list[float]])
    gc_pauses: list[float] = field(default_factory=list[float])


def measured(name: str, model: PacedModel, received: dict[int, float], pauses: GcPauses, **extra: Any) -> Measured:
    missing = [i for i in range(model.deltas) if i not in received or i not in model.yielded]
    if missing:
        raise RuntimeError(f"{name}: {len(missing)} deltas were not received (first: d{missing[0]})")
    latencies = [received[i] - model.yielded[i] for i in range(model.deltas)]
    stream_seconds = max(received.values()) - min(model.yielded.values())
    late = [model.late[i] for i in range(model.deltas)]
    return Measured(name, latencies, late, stream_seconds, gc_pauses=list(pauses.pauses), **extra)


class GcPauses:
    """The cyclic GC's collections during a measured run (every thread of the process waits for them).

    This one process holds what is several processes on AWS (moto's DynamoDB, S3 and Step
    Functions, the API, the worker, the client): about 360,000 objects after the warm-ups, a full
    collection of which takes some 250 ms. Unless `freeze` is off, they are collected and frozen
    (`gc.freeze()`) before each measured run, so a full collection of that heap, which only this
    all-in-one process has, does not land in the figures; the pauses that remain are reported.
    """

    def __init__(self, *, freeze: bool) -> None:
        self.freeze = freeze
        self.pauses: list[float] = []
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append(time.perf_counter() - self._started)

    @contextmanager
    def measuring(self) -> Iterator[None]:
        if self.freeze:
            gc.collect()
            gc.freeze()
        self.pauses = []
        gc.callbacks.append(self._callback)
        try:
            yield
        finally:
            gc.callbacks.remove(self._callback)


def percentile(values: list[float], q: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


# --- direct: stream_text in process ---------------------------------------------------------------


async def direct_once(model: PacedModel) -> dict[int, float]:
    received: dict[int, float] = {}
    result = stream_text(model=model, prompt=PROMPT)
    async for chunk in result.ui_message_stream():
        if isinstance(chunk, TextDeltaChunk):
            encode_chunk(chunk)
            now = time.perf_counter()
            for match in INDEX.finditer(chunk.delta):
                received[int(match[1])] = now
    await result.consume()
    return received


def direct(model: PacedModel, deltas: int, pauses: GcPauses) -> Measured:
    model.prepare(WARM_UP_DELTAS)
    asyncio.run(direct_once(model))
    model.prepare(deltas)
    with pauses.measuring():
        received = asyncio.run(direct_once(model))
    return measured("direct", model, received, pauses)


# --- durable: the local runtime, served by uvicorn ------------------------------------------------


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """The app on a free port, in a thread (the pattern of tests/support/server.py)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def chat_once(url: str, chat_id: str) -> tuple[dict[int, float], int, str]:
    """POST /api/chat as DefaultChatTransport does; delta index → receive time, data frames, run id."""
    body = {
        "id": chat_id,
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": PROMPT}]}],
        "trigger": "submit-message",
    }
    received: dict[int, float] = {}
    frames, run_id, done = 0, "", False
    decoder = SseDecoder()
    with httpx.Client(base_url=url, timeout=60) as client, client.stream("POST", "/api/chat", json=body) as response:
        response.raise_for_status()
        for text in response.iter_text():
            for event in decoder.feed(text):
                if event.data == "[DONE]":
                    done = True
                    continue
                chunk = loads_strict(event.data)
                now = time.perf_counter()
                frames += 1
                if chunk["type"] == "text-delta":
                    for match in INDEX.finditer(chunk["delta"]):
                        received[int(match[1])] = now
                elif chunk["type"] == "start":
                    run_id = chunk["messageMetadata"]["runId"]
    if not done:
        raise RuntimeError(f"chat {chat_id}: the stream ended without [DONE]")
    return received, frames, run_id


class TimedStore:
    """The store, noting when each delta's event write started and returned (`append_events`)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.write_started: dict[int, float] = {}
        self.written: dict[int, float] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def append_events(self, user_id: str, run_id: str, events: Any, *, now: int) -> Any:
        started = time.perf_counter()
        stored = self._store.append_events(user_id, run_id, events, now=now)
        done = time.perf_counter()
        for event in events:
            for chunk in event.chunks:
                if chunk.get("type") == "text-delta":
                    for match in INDEX.finditer(chunk["delta"]):
                        self.write_started[int(match[1])] = started
                        self.written[int(match[1])] = done
        return stored

    def reset(self) -> None:
        self.write_started.clear()
        self.written.clear()


@dataclass(frozen=True)
class Durable:
    name: str
    window: float
    poll: float

    @property
    def slug(self) -> str:
        return self.name.replace(" ", "-")

    def describe(self) -> str:
        return f"delta_window {self.window * 1000:.0f} ms, poll_seconds {self.poll * 1000:.0f} ms"


def durable(
    backend: LocalBackend, store: TimedStore, model: PacedModel, config: Durable, deltas: int, pauses: GcPauses
) -> Measured:
    services = backend.services
    services.delta_window = config.window  # the handlers read this same object
    app = create_app(services, DevTokens(), ApiOptions(poll_seconds=config.poll))
    with serving(app) as url:
        model.prepare(WARM_UP_DELTAS)
        chat_once(url, f"warm-{config.slug}")
        model.prepare(deltas)
        store.reset()
        with pauses.measuring():
            received, frames, run_id = chat_once(url, f"bench-{config.slug}")
    events = services.store.events_after(DEFAULT_LOCAL_USER, run_id, 0, now=services.clock())
    indices = range(deltas)
    segments = {
        "held in the batcher": [store.write_started[i] - model.yielded[i] for i in indices],
        "append_events (moto)": [store.written[i] - store.write_started[i] for i in indices],
        "written → client": [received[i] - store.written[i] for i in indices],
    }
    return measured(
        config.name, model, received, pauses, events=Counter(e.type for e in events), frames=frames, segments=segments
    )


# --- report ---------------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:9.2f}"


def report(results: list[Measured], deltas: int) -> None:
    print(
        f"{'path':<16} {'p50':>9} {'p90':>9} {'p99':>9} {'max':>9}   {'late p99':>9} {'gc max':>9}"
        f" {'stream s':>8} {'events':>7} {'frames':>7}"
    )
    for r in results:
        extra = "" if r.events is None else f" {sum(r.events.values()):>7} {r.frames:>7}"
        print(
            f"{r.name:<16} {ms(percentile(r.latencies, 0.5))} {ms(percentile(r.latencies, 0.9))}"
            f" {ms(percentile(r.latencies, 0.99))} {ms(max(r.latencies))}   {ms(percentile(r.late, 0.99))}"
            f" {ms(max(r.gc_pauses, default=0.0))} {r.stream_seconds:>8.2f}{extra}"
        )
    print(
        f"(ms over {deltas:,} deltas. late p99: how far behind its schedule the model yielded a delta, which "
        "is not in the latency;\n gc max: the longest GC collection during the run; stream s: first yield to "
        "last delta received;\n events: written to the run's log; frames: SSE data frames received, [DONE] aside)"
    )
    base = results[0]
    for r in results[1:]:
        assert r.events is not None
        kinds = ", ".join(f"{n} {kind}" for kind, n in r.events.most_common())
        p50 = percentile(r.latencies, 0.5) / percentile(base.latencies, 0.5)
        p99 = percentile(r.latencies, 0.99) / percentile(base.latencies, 0.99)
        print(f"{r.name}: p50 ×{p50:,.0f}, p99 ×{p99:,.0f} the direct path's; events: {kinds}")
    print("where the durable latency goes, per delta (ms, p50 / p99; the three add up to the latency):")
    for r in results[1:]:
        parts = "  ".join(
            f"{name} {percentile(v, 0.5) * 1000:6.1f} / {percentile(v, 0.99) * 1000:6.1f}"
            for name, v in r.segments.items()
        )
        print(f"  {r.name:<16} {parts}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--deltas", type=int, help="text deltas per measured stream (default 1,000; 200 with --quick)")
    parser.add_argument("--interval-ms", type=float, default=3.0, help="model pace: ms between deltas (default 3)")
    parser.add_argument("--no-gc-freeze", action="store_true", help="leave the warm heap to the GC (see GcPauses)")
    args = parser.parse_args()
    deltas = args.deltas or (200 if args.quick else 1_000)
    started = time.perf_counter()
    configs = [
        Durable("durable default", DEFAULT_WINDOW, ApiOptions().poll_seconds),
        Durable("durable 20 ms", 0.02, 0.02),
    ]
    pauses = GcPauses(freeze=not args.no_gc_freeze)
    print(
        f"Python {sys.version.split()[0]}; {deltas:,} text deltas, one every {args.interval_ms:g} ms; "
        "latency = the client has parsed the SSE event carrying a delta − the model yielded it"
    )
    print("  direct           stream_text → ui_message_stream() → encode_chunk, in process")
    for config in configs:
        print(f"  {config.name:<16} POST /api/chat, local runtime (moto) under uvicorn: {config.describe()}")
    freeze = "collected and frozen (gc.freeze)" if pauses.freeze else "left to the GC (--no-gc-freeze)"
    print(f"  one warm-up run per path; the warm heap {freeze} before each measured run")
    model = PacedModel(deltas, args.interval_ms / 1000)
    results = [direct(model, deltas, pauses)]
    tools, approval = load_toolset(DEFAULT_TOOLS)

    def make_services(**backend: Any) -> Services:
        return Services(model=model, tools=tools, tool_approval=approval or None, client="stepline-bench", **backend)

    with local_backend(make_services) as backend:
        store = TimedStore(backend.services.store)
        backend.services.store = store  # the handlers and the app read it from these services
        results += [durable(backend, store, model, config, deltas, pauses) for config in configs]
    report(results, deltas)
    print(f"wall time {time.perf_counter() - started:.1f} s (warm-ups, moto setup and all runs)")


if __name__ == "__main__":
    main()
