"""The local runtime under load, from outside: N concurrent conversations on `stepline dev`.

    PYTHONPATH=shared .venv/bin/python bench/local_load.py [--runs N] [--memory] [--also DIR]

Black box, the way users run it: this script writes a script book (`stepline.llm.script_book`)
with three scripts and starts `python -m stepline.cli dev` as a subprocess on a free port (its data
folder in a temporary directory; `--memory`: moto's memory), with the default agent's workspace
tools (`write_file` needs the user's approval). The client (httpx, async, in this process) plays N
(default 200) conversations at once, the kinds in turn:

- **text**: one step streaming one text part of `--deltas` deltas (default 30, 5 ms apart);
- **tool**: a `list_files` call, then a text answer (two steps, the tool run by the server);
- **approval**: a `write_file` call that waits for the user: the POST's stream ends at the request
  (`[DONE]`), the client opens the resume stream (`GET /api/chat/{id}/stream` with the last
  `Last-Event-ID` it read), decides through `POST /api/approvals/{id}`, and reads the resumed run
  on that stream to its `[DONE]`.

Two phases, one after the other: **mixed** (N runs of the three kinds; each approval is decided
as soon as it is asked) and **parked** (N approval runs, none decided until all N wait with their
resume streams open; the server's threads and memory are sampled for 2 s in that state, then all
are decided at once). Every run is checked at its end:

- errors: a non-2xx answer, a stream that ends without `[DONE]` or with an `error` chunk, a
  transport error, a protocol violation in the reduction;
- lost or duplicated events: the SSE ids (`seq.index`) over both streams of a run must be
  `1.0, 1.1, …, 2.0, …` exactly: strictly increasing, no seq and no index skipped;
- the stream reduced by Stepline's reducer (`stepline.protocol.reducer`) must equal the stored
  assistant message (`GET /api/conversations/{id}`: its id and parts);
- never completed: a run not done in `--timeout` seconds (default 300).

The server's resident memory and thread count are read from /proc/PID/status every 0.2 s.
Printed per phase: runs, wall time, throughput (runs/s), p50 / p99 run time (POST to the last
`[DONE]`, for parked runs from the decision to it), the counts above, peak RSS and max threads;
and RSS after the warm-up and at the end. `--also DIR` also runs the server from another
checkout's shared/ (say, the code before a change) in the same invocation, for a before/after in
one run. The client shares the machine's cores with the server. Figures only; no assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from stepline.protocol.chunks import parse_chunk
from stepline.protocol.reducer import reduce_ui_message_stream
from stepline.protocol.sse import SseDecoder

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ttft import server  # the same subprocess start as the latency benchmark

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("text", "tool", "approval")
_FINISH = {"unified": "stop", "raw": "stop"}
_USAGE = {"inputTokens": {"total": 10, "noCache": 10}, "outputTokens": {"total": 10}}


def _text_step(deltas: int, pace_ms: float) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "stream-start", "warnings": []}, {"type": "text-start", "id": "t1"}]
    parts += [{"type": "text-delta", "id": "t1", "delta": f"w{i} "} for i in range(deltas)]
    parts += [{"type": "text-end", "id": "t1"}, {"type": "finish", "finishReason": _FINISH, "usage": _USAGE}]
    return {"parts": parts, "delaysMs": [0, 0] + [pace_ms] * deltas + [0, 0]}


def _call_step(call_id: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(args)
    parts: list[dict[str, Any]] = [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-input-start", "id": call_id, "toolName": tool},
        {"type": "tool-input-delta", "id": call_id, "delta": text},
        {"type": "tool-input-end", "id": call_id},
        {"type": "tool-call", "toolCallId": call_id, "toolName": tool, "input": text},
        {"type": "finish", "finishReason": {"unified": "tool-calls", "raw": "tool_use"}, "usage": _USAGE},
    ]
    return {"parts": parts}


def book(deltas: int) -> dict[str, Any]:
    """One script per kind, matched by the prompt `load-<kind>`."""
    answer = _text_step(max(1, deltas // 3), 5)
    steps = {
        "text": [_text_step(deltas, 5)],
        "tool": [_call_step("call-list", "list_files", {}), answer],
        "approval": [_call_step("call-write", "write_file", {"path": "notes/load.md", "content": "hi"}), answer],
    }
    scripts = [{"name": kind, "match": [f"load-{kind}"], "steps": steps[kind]} for kind in KINDS]
    return {"description": "bench/local_load.py", "scripts": scripts, "fallback": {"steps": [_text_step(1, 0)]}}


class RunFailed(Exception):
    """A run broke one of the checks; the message says which."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


@dataclass
class Stream:
    ids: list[str] = field(default_factory=list[str])
    chunks: list[Any] = field(default_factory=list[Any])
    done: bool = False


async def read_sse(response: httpx.Response, into: Stream) -> None:
    """Read a UI Message Stream to its end into `into`."""
    if response.status_code != 200:
        raise RunFailed("error", f"{response.request.method} {response.request.url.path}: {response.status_code}")
    decoder = SseDecoder()
    async for text in response.aiter_text():
        for event in decoder.feed(text):
            if event.data == "[DONE]":
                into.done = True
                continue
            chunk = json.loads(event.data)
            if chunk.get("type") == "error":
                raise RunFailed("error", f"error chunk: {chunk.get('errorText')}")
            into.ids.append(event.id or "")
            into.chunks.append(parse_chunk(chunk))
    if not into.done:
        raise RunFailed("error", "the stream ended without [DONE]")


def check_ids(ids: list[str]) -> None:
    """`seq.index` ids in exact order: each the next index of its seq, or index 0 of the next seq."""
    expected = (1, 0)
    for given in ids:
        seq, _, index = given.partition(".")
        got = (int(seq), int(index or 0))
        if got == expected or got == (expected[0] + 1, 0):
            expected = (got[0], got[1] + 1)
            continue
        raise RunFailed(
            "lost/duplicated", f"id {given} where {expected[0]}.{expected[1]} or {expected[0] + 1}.0 was due"
        )


@dataclass
class Outcome:
    seconds: float
    failure: str | None = None


class Client:
    """One bench client of one server."""

    def __init__(self, http: httpx.AsyncClient, timeout: float) -> None:
        self.http = http
        self.timeout = timeout

    async def conversation(self, chat_id: str, kind: str, before_decide: Callable[[], Any] | None = None) -> Outcome:
        """One run to its end, checked; `before_decide` is awaited before an approval is decided."""
        started = time.perf_counter()
        try:
            seconds = await asyncio.wait_for(self._play(chat_id, kind, before_decide, started), self.timeout)
        except TimeoutError:
            return Outcome(time.perf_counter() - started, "never completed")
        except RunFailed as failed:
            return Outcome(time.perf_counter() - started, str(failed))
        except httpx.HTTPError as error:
            return Outcome(time.perf_counter() - started, f"error: {type(error).__name__} {error}")
        return Outcome(seconds)

    async def _play(self, chat_id: str, kind: str, before_decide: Callable[[], Any] | None, started: float) -> float:
        body = {
            "id": chat_id,
            "messages": [{"id": f"u-{chat_id}", "role": "user", "parts": [{"type": "text", "text": f"load-{kind}"}]}],
            "trigger": "submit-message",
        }
        stream = Stream()
        async with self.http.stream("POST", "/api/chat", json=body) as response:
            await read_sse(response, stream)
        if kind == "approval":
            request = next((c for c in stream.chunks if c.type == "tool-approval-request"), None)
            if request is None:
                raise RunFailed("error", "no tool-approval-request")
            headers = {"last-event-id": stream.ids[-1]}
            async with self.http.stream("GET", f"/api/chat/{chat_id}/stream", headers=headers) as resumed:
                if before_decide is not None:
                    await before_decide()
                    started = time.perf_counter()
                decided = await self.http.post(f"/api/approvals/{request.approval_id}", json={"approved": True})
                if decided.status_code != 200:
                    raise RunFailed("error", f"POST /api/approvals: {decided.status_code} {decided.text[:200]}")
                await read_sse(resumed, stream)
        seconds = time.perf_counter() - started
        await self._check(chat_id, stream)
        return seconds

    async def _check(self, chat_id: str, stream: Stream) -> None:
        check_ids(stream.ids)
        reduced = reduce_ui_message_stream(stream.chunks)
        if reduced.error is not None:
            raise RunFailed("error", f"protocol violation: {reduced.error}")
        answer = await self.http.get(f"/api/conversations/{chat_id}")
        if answer.status_code != 200:
            raise RunFailed("error", f"GET /api/conversations: {answer.status_code}")
        stored = answer.json()["messages"][-1]
        message = reduced.message or {}
        if (message.get("id"), message.get("parts")) != (stored["id"], stored["parts"]):
            raise RunFailed("mismatch", "the reduced stream is not the stored message")


@dataclass
class Sampler:
    """The server's VmRSS (MB) and thread count, every 0.2 s while it runs."""

    pid: int
    rss: list[float] = field(default_factory=list[float])
    threads: list[int] = field(default_factory=list[int])

    def read(self) -> tuple[float, int]:
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{self.pid}/status").read_text().splitlines() if ":" in line
        )
        return int(fields["VmRSS"].split()[0]) / 1024, int(fields["Threads"])

    @contextlib.asynccontextmanager
    async def sampling(self) -> AsyncGenerator[Sampler]:
        window = Sampler(self.pid)

        async def loop() -> None:
            while True:
                rss, threads = self.read()
                window.rss.append(rss)
                window.threads.append(threads)
                await asyncio.sleep(0.2)

        task = asyncio.create_task(loop())
        try:
            yield window
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def percentile(values: list[float], q: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))] if ordered else math.nan


@dataclass
class Phase:
    name: str
    outcomes: list[Outcome]
    wall: float
    window: Sampler
    parked: Sampler | None = None
    waited: int = 0
    """How many runs were parked when `parked` was sampled."""

    def line(self) -> str:
        failures = [o.failure for o in self.outcomes if o.failure]
        counts = {
            kind: sum(1 for f in failures if f.startswith(kind)) for kind in ("error", "lost", "mismatch", "never")
        }
        done = [o.seconds for o in self.outcomes if not o.failure]
        waiting = ""
        if self.parked is not None:
            parked = self.parked
            waiting = f" | while {self.waited} wait: threads {max(parked.threads)}, RSS {max(parked.rss):.0f} MB"
        return (
            f"  {self.name:<7} {len(self.outcomes):>4} runs {self.wall:>7.1f} s {len(done) / self.wall:>7.2f} runs/s"
            f"  p50 {percentile(done, 0.5):>6.2f} s  p99 {percentile(done, 0.99):>6.2f} s"
            f"  errors {counts['error']}  lost/dup {counts['lost']}  mismatch {counts['mismatch']}"
            f"  never {counts['never']}  peak RSS {max(self.window.rss):.0f} MB  max threads {max(self.window.threads)}"
            f"{waiting}"
        )


async def measure(url: str, pid: int, runs: int, run_seconds: float, label: str) -> list[str]:
    sampler = Sampler(pid)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(base_url=url, timeout=run_seconds, limits=limits) as http:
        client = Client(http, run_seconds)
        warm = await client.conversation(f"{label}-warm", "text")
        if warm.failure:
            raise RuntimeError(f"the warm-up run failed: {warm.failure}")
        rss_start, threads_start = sampler.read()
        phases: list[Phase] = []
        async with sampler.sampling() as window:
            started = time.perf_counter()
            jobs = [client.conversation(f"{label}-m{i}", KINDS[i % 3]) for i in range(runs)]
            outcomes = list(await asyncio.gather(*jobs))
            phases.append(Phase("mixed", outcomes, time.perf_counter() - started, window))
        async with sampler.sampling() as window:
            parked, decide = asyncio.Semaphore(0), asyncio.Event()

            count = [0]

            async def before_decide() -> None:
                count[0] += 1
                parked.release()
                await decide.wait()

            started = time.perf_counter()
            tasks = [
                asyncio.create_task(client.conversation(f"{label}-p{i}", "approval", before_decide))
                for i in range(runs)
            ]
            all_parked = asyncio.create_task(_acquire(parked, runs))
            await asyncio.wait(
                [all_parked, asyncio.gather(*tasks)], timeout=run_seconds, return_when=asyncio.FIRST_COMPLETED
            )
            waited = count[0]
            async with sampler.sampling() as waiting:
                await asyncio.sleep(2.0)
            decide.set()
            outcomes = list(await asyncio.gather(*tasks))
            all_parked.cancel()
            phases.append(Phase("parked", outcomes, time.perf_counter() - started, window, waiting, waited))
        rss_end, threads_end = sampler.read()
    lines = [f"{label}: after warm-up RSS {rss_start:.0f} MB, {threads_start} threads"]
    lines += [phase.line() for phase in phases]
    lines.append(f"  at the end RSS {rss_end:.0f} MB, {threads_end} threads")
    for phase in phases:
        failures = sorted({o.failure or "" for o in phase.outcomes if o.failure})
        lines += [f"    {phase.name} failure: {f}" for f in failures[:5]]
    return lines


async def _acquire(semaphore: asyncio.Semaphore, count: int) -> None:
    for _ in range(count):
        await semaphore.acquire()


@contextmanager
def dev_process(command: list[str], env: dict[str, str]) -> Generator[tuple[str, int]]:
    """`stepline dev` on a free port; its URL and pid."""
    with server(command, env) as url:
        port = url.rsplit(":", 1)[1]
        pids = [p for p in os.listdir("/proc") if p.isdigit() and _listens(p, port, command)]
        yield url, int(pids[0])


def _listens(pid: str, port: str, command: list[str]) -> bool:
    with contextlib.suppress(OSError):
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        return b"--port" in argv and argv[argv.index(b"--port") + 1] == port.encode() and b"dev" in argv
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="concurrent conversations per phase (default 200)")
    parser.add_argument("--deltas", type=int, default=30, help="text deltas of a text run (default 30)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a run counts as never completed")
    parser.add_argument("--memory", action="store_true", help="serve with --memory (moto) instead of a data folder")
    parser.add_argument("--also", metavar="DIR", help="also run the server from DIR/shared (another checkout)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        book_path = Path(tmp) / "load-book.json"
        book_path.write_text(json.dumps(book(args.deltas)), encoding="utf-8")
        (Path(tmp) / "no-web").mkdir()
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "shared"),
            "STEPLINE_MODEL": f"scripted:{book_path}",
            "STEPLINE_WEB_DIST": str(Path(tmp) / "no-web"),
        }
        env.pop("STEPLINE_DEV_TOKENS", None)
        servers = {"this checkout": str(ROOT / "shared")}
        if args.also:
            servers = {f"--also {args.also}": str(Path(args.also).resolve() / "shared"), **servers}
        storage = "--memory (moto)" if args.memory else "a data folder (SQLite)"
        print(f"Python {sys.version.split()[0]}; {args.runs} concurrent runs per phase; storage {storage}")
        for n, (label, shared) in enumerate(servers.items()):
            data = ["--memory"] if args.memory else ["--data", str(Path(tmp) / f"data-{n}")]
            command = [sys.executable, "-m", "stepline.cli", "dev", *data]
            with dev_process(command, {**env, "PYTHONPATH": shared}) as (url, pid):
                lines = asyncio.run(measure(url, pid, args.runs, args.timeout, f"s{n}"))
            print(f"[{label}]")
            print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
