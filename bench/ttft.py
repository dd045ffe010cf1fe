"""Time to first token and streaming lag, measured from outside: `stepline dev` against the AI SDK.

    .venv/bin/python bench/ttft.py [--deltas N] [--runs R] [--paces 5,20] [--backends sqlite,memory]
                                   [--lambda-mb MB,MB] [--also DIR]

Black box, the way a user runs it. This script writes a script book (`stepline.llm.script_book`)
with one script per pace: one text part of N deltas (500), one every D ms (5 and 20), on the
model's own clock (`delaysMs`: delta i is due (i + 1)·D after the model call starts). Then, in the
same run, it starts two servers as subprocesses on free ports:

- **stepline dev**: `python -m stepline.cli dev --port P` with `STEPLINE_MODEL=scripted:<book>`, the
  command a user runs: the durable path (turn start, the state machine on moto, the model step
  writing batched events to the store, the API's tail reading them back as SSE), once per backend:
  `sqlite` (the default, `--data DIR`: the store in a SQLite file, here in a temporary folder) and
  `memory` (`--memory`: DynamoDB on moto);
- **AI SDK peer** (`bench/ttft_peer.mjs`): `streamText` on `MockLanguageModelV4` from `ai/test`
  playing the same parts on the same schedule, `toUIMessageStreamResponse()` on a Node HTTP server.

The client (httpx in this process) POSTs DefaultChatTransport's body to `/api/chat` of each, parses
the SSE as it arrives, and notes when each delta arrives (delta i carries `d0017 `, so a batch of
merged deltas is read correctly). With t0 the moment the request is sent:

- added TTFT = arrival of delta 0 − t0 − D (what the server adds to the model's own first token);
- per-delta lag = arrival of delta i − (t0 + (i + 1)·D): how late each delta reaches the client
  against the model's schedule (it includes the added TTFT);
- SSE frames: `data:` events received, `[DONE]` included.

`--lambda-mb 1024,512` adds, per backend, a `stepline dev` limited as a whole to Lambda's CPU
share at each memory size (`bench/cpu_share.py`; root needed). On AWS only the function in
question runs at that share, and DynamoDB's and Step Functions' own work runs elsewhere, so these
rows bound from above what a function's memory adds to the time to first token.

One warm-up request per server first (imports, moto, the first execution); then R runs per pace
and server, alternating servers. It prints, per pace, the issue's table (p50 over the runs of the
added TTFT, its max, the lag's p50 / p99 over every delta of every run, the SSE frames of a run)
and each backend against the targets, computed from the peer measured in the same run:
added TTFT p50 <= 50 ms and <= 1.5 x the peer's + 50 ms; lag p50 <= the peer's + 50 ms, p99 <= 300 ms.
Figures only; no assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.cpu_share import cpu_quota, share_of  # noqa: E402
from stepline.protocol.sse import SseDecoder  # noqa: E402

INDEX = re.compile(r"d(\d+) ")
WARM = "warm"


def book(deltas: int, paces: list[float]) -> dict[str, object]:
    """One script per pace (named `pace-<ms>`), and a short warm-up script."""

    def step(count: int, pace_ms: float) -> dict[str, object]:
        width = max(4, len(str(count - 1)))
        parts: list[Any] = [
            {"type": "stream-start", "warnings": []},
            {"type": "text-start", "id": "t1"},
        ]
        parts += [{"type": "text-delta", "id": "t1", "delta": f"d{i:0{width}} "} for i in range(count)]
        usage = {"inputTokens": {"total": 10, "noCache": 10}, "outputTokens": {"total": count}}
        parts += [
            {"type": "text-end", "id": "t1"},
            {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": usage},
        ]
        delays = [0, 0] + [pace_ms] * count + [0, 0]
        return {"parts": parts, "delaysMs": delays}

    scripts = [{"name": WARM, "match": [WARM], "steps": [step(20, 5)]}]
    scripts += [{"name": name(p), "match": [name(p)], "steps": [step(deltas, p)]} for p in paces]
    return {"description": "bench/ttft.py", "scripts": scripts, "fallback": {"steps": [step(1, 0)]}}


def name(pace_ms: float) -> str:
    return f"pace-{pace_ms:g}ms"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server(command: list[str], env: dict[str, str], cpu_mb: int | None = None) -> Generator[str]:
    """A server subprocess on a free port, at Lambda's CPU share of `cpu_mb` if given; its URL once it answers."""
    port = free_port()
    with contextlib.ExitStack() as quota:  # the cgroup goes once the process has ended
        join = None if cpu_mb is None else quota.enter_context(cpu_quota(cpu_mb))
        process = subprocess.Popen(
            [*command, str(port)] if command[0] == "node" else [*command, "--port", str(port)],
            env=env,
            cwd=ROOT,
            preexec_fn=join,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        with _until_ended(process):
            yield _answering(process, command, f"http://127.0.0.1:{port}")


def _answering(process: subprocess.Popen[bytes], command: list[str], url: str) -> str:
    """`url` once `/api/health` answers there."""
    deadline = time.monotonic() + 120
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{command} exited: {process.stderr.read().decode() if process.stderr else ''}")
        try:
            if httpx.get(f"{url}/api/health", timeout=1).status_code == 200:
                return url
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{command} did not answer in 120 s")
        time.sleep(0.1)


@contextmanager
def _until_ended(process: subprocess.Popen[bytes]) -> Generator[None]:
    """Terminate `process` on the way out (killed after 10 s), and wait for its end."""
    try:
        yield
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Run:
    sent: float
    arrivals: dict[int, float] = field(default_factory=dict[int, float])
    frames: int = 0


def chat(client: httpx.Client, url: str, prompt: str, chat_id: str) -> Run:
    """POST /api/chat as DefaultChatTransport does; when each delta arrived."""
    body = {
        "id": chat_id,
        "messages": [{"id": f"u-{chat_id}", "role": "user", "parts": [{"type": "text", "text": prompt}]}],
        "trigger": "submit-message",
    }
    decoder = SseDecoder()
    run = Run(sent=time.perf_counter())
    done = False
    with client.stream("POST", f"{url}/api/chat", json=body) as response:
        response.raise_for_status()
        for text in response.iter_text():
            now = time.perf_counter()
            for event in decoder.feed(text):
                run.frames += 1
                if event.data == "[DONE]":
                    done = True
                    continue
                chunk = json.loads(event.data)
                if chunk.get("type") == "text-delta":
                    for match in INDEX.finditer(chunk["delta"]):
                        run.arrivals.setdefault(int(match[1]), now)
    if not done:
        raise RuntimeError(f"{url}: the stream of {chat_id} ended without [DONE]")
    return run


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def percentile(values: list[float], q: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class Figures:
    ttft: list[float] = field(default_factory=list[float])
    lags: list[float] = field(default_factory=list[float])
    frames: list[int] = field(default_factory=list[int])

    def add(self, run: Run, deltas: int, pace: float) -> None:
        missing = [i for i in range(deltas) if i not in run.arrivals]
        if missing:
            raise RuntimeError(f"{len(missing)} deltas never arrived (first: {missing[0]})")
        self.ttft.append(run.arrivals[0] - run.sent - pace)
        self.lags += [run.arrivals[i] - run.sent - (i + 1) * pace for i in range(deltas)]
        self.frames.append(run.frames)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--deltas", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3, help="measured runs per pace and server (default 3)")
    parser.add_argument("--paces", default="5,20", help="ms between deltas, comma-separated (default 5,20)")
    parser.add_argument(
        "--backends", default="sqlite,memory", help="stepline dev's storage: sqlite (--data) and/or memory (--memory)"
    )
    parser.add_argument(
        "--also",
        metavar="DIR",
        help="also run `stepline dev` from another checkout's shared/ (say, the code before a change),"
        " in the same run: `git archive <commit> shared infra template.yaml | tar -x -C DIR`",
    )
    parser.add_argument(
        "--lambda-mb",
        default="",
        metavar="MB,MB",
        help="also run each backend's stepline dev whole at Lambda's CPU share of each memory size"
        " (bench/cpu_share.py: a cgroup CPU quota of MB/1769 CPUs; needs root)",
    )
    args = parser.parse_args()
    deltas: int = args.deltas
    lambda_mb = [int(mb) for mb in args.lambda_mb.split(",") if mb]
    paces = [float(p) for p in args.paces.split(",")]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        book_path = Path(tmp) / "ttft-book.json"
        book_path.write_text(json.dumps(book(deltas, paces)), encoding="utf-8")
        (Path(tmp) / "no-web").mkdir()
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "shared"),
            "STEPLINE_MODEL": f"scripted:{book_path}",
            "STEPLINE_WEB_DIST": str(Path(tmp) / "no-web"),  # no UI build: the API only
        }
        env.pop("STEPLINE_DEV_TOKENS", None)
        dev = [sys.executable, "-m", "stepline.cli", "dev"]
        storage = {"sqlite": ["--data", str(Path(tmp) / "data")], "memory": ["--memory"]}
        servers: dict[str, tuple[list[str], dict[str, str], int | None]] = {
            "AI SDK peer": (["node", str(ROOT / "bench" / "ttft_peer.mjs"), str(book_path)], env, None),
        }
        for backend in args.backends.split(","):
            servers[f"dev {backend}"] = ([*dev, *storage[backend]], env, None)
            for mb in lambda_mb:
                data = ["--data", str(Path(tmp) / f"data-{mb}")] if backend == "sqlite" else storage[backend]
                servers[f"dev {backend} at {mb} MB"] = ([*dev, *data], env, mb)
        if args.also:
            also = {**env, "PYTHONPATH": str(Path(args.also).resolve() / "shared")}
            for backend in args.backends.split(","):
                also_storage = ["--data", str(Path(tmp) / "also")] if backend == "sqlite" else storage[backend]
                servers[f"also {backend}"] = ([*dev, *also_storage], also, None)
        figures: dict[tuple[str, float], Figures] = {(s, p): Figures() for s in servers for p in paces}
        with contextlib.ExitStack() as stack:
            urls = {label: stack.enter_context(server(command, e, mb)) for label, (command, e, mb) in servers.items()}
            client = stack.enter_context(httpx.Client(timeout=120))
            for label, url in urls.items():
                chat(client, url, WARM, f"warm-{label.replace(' ', '-')}")
            for pace in paces:
                for n in range(args.runs):
                    for label, url in urls.items():
                        run = chat(client, url, name(pace), f"bench-{label.replace(' ', '-')}-{pace:g}-{n}")
                        figures[(label, pace)].add(run, deltas, pace / 1000)
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"Python {sys.version.split()[0]}, node {node}, load average {load}; {deltas} text deltas per run,"
        f" {args.runs} runs per pace and server (after one warm-up each)"
    )
    if args.also:
        print(f"also: stepline dev from {args.also}")
    for mb in lambda_mb:
        print(f"at {mb} MB: the whole stepline dev process limited to {share_of(mb):.3f} CPUs (bench/cpu_share.py)")
    print("ms; added TTFT: first text delta's arrival - request sent - the model's own first delay (p50 over runs,")
    print("max); lag: each delta's arrival against the model's schedule (p50 / p99 over every delta of every run)")
    for pace in paces:
        print(f"\n{pace:g} ms between deltas\n")
        print("| | added time to first text delta (p50, max) | per-delta lag p50 / p99 | SSE frames |")
        print("|---|---|---|---|")
        for label in servers:
            f = figures[(label, pace)]
            print(
                f"| {label} | {ms(percentile(f.ttft, 0.5))} ({ms(max(f.ttft))}) |"
                f" {ms(percentile(f.lags, 0.5))} / {ms(percentile(f.lags, 0.99))} |"
                f" {round(sum(f.frames) / len(f.frames))} |"
            )
        peer = figures[("AI SDK peer", pace)]
        peer_ttft, peer_lag = percentile(peer.ttft, 0.5), percentile(peer.lags, 0.5)
        ttft_bound = min(0.050, 1.5 * peer_ttft + 0.050)
        lag_bound = ms(peer_lag + 0.050)
        print(f"\ntargets from this run's peer: TTFT <= {ms(ttft_bound)}, lag p50 <= {lag_bound}, p99 <= 300")
        for label in servers:
            if label == "AI SDK peer":
                continue
            f = figures[(label, pace)]
            ttft, lag, p99 = percentile(f.ttft, 0.5), percentile(f.lags, 0.5), percentile(f.lags, 0.99)
            verdict = [
                f"TTFT {ms(ttft)} {'met' if ttft <= ttft_bound else 'MISSED'}",
                f"lag p50 {ms(lag)} {'met' if lag <= peer_lag + 0.050 else 'MISSED'}",
                f"p99 {ms(p99)} {'met' if p99 <= 0.300 else 'MISSED'}",
                f"TTFT/peer {ttft / peer_ttft:.1f}x" if peer_ttft > 0 else "",
            ]
            print(f"  {label}: {'; '.join(v for v in verdict if v)}")
    print(f"wall time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
