"""Stop from another client: how long from `POST /api/runs/{id}/abort` to the abort chunk on every stream.

    .venv/bin/python bench/stop.py [--runs 20] [--pace 10] [--backend sqlite|memory]

Black box, the way a user runs it: `stepline dev` as a subprocess on a free port (`--data` in a
temporary folder, or `--memory`), its model a script book (`STEPLINE_MODEL=scripted:<book>`): one text
part of 2000 deltas, one every `--pace` ms (20 s at 10 ms), so every Stop lands mid-stream. Per run:

- tab A POSTs `/api/chat` (DefaultChatTransport's body) and reads the SSE as it arrives;
- tab B attaches to the same run (`GET /api/chat/{id}/stream`, the SDK's resume);
- once both have seen 20 text deltas, a third client (another device) POSTs `/api/runs/{runId}/abort`
  at t0; each tab notes when its `{"type": "abort"}` chunk arrives, and whether any text delta came after it.

Then it reads the conversation back: the answer must keep the text streamed before the Stop (the
stored text is a prefix of the script's, at least as long as what the tabs saw before t0), and a text
delta after the abort chunk counts as a failure.

The reference, measured in the same run on the same server: a run that ends by itself (a 20-delta
script), from the arrival of its last text delta to its `finish` chunk on tab B (what ending a run
costs with no abort), and the round trip of `GET /api/health` (the HTTP floor). Figures only; no
assertions.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ttft import server
from stepline.protocol._json import loads_strict
from stepline.protocol.sse import SseDecoder

ROOT = Path(__file__).resolve().parents[1]
LONG, SHORT = "long answer", "short answer"
DELTAS_BEFORE_STOP = 20


def book(pace_ms: float) -> dict[str, object]:
    def step(count: int) -> dict[str, object]:
        parts: list[Any] = [{"type": "stream-start", "warnings": []}, {"type": "text-start", "id": "t1"}]
        parts += [{"type": "text-delta", "id": "t1", "delta": f"w{i} "} for i in range(count)]
        usage = {"inputTokens": {"total": 10, "noCache": 10}, "outputTokens": {"total": count}}
        parts += [
            {"type": "text-end", "id": "t1"},
            {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": usage},
        ]
        return {"parts": parts, "delaysMs": [0, 0] + [pace_ms] * count + [0, 0]}

    return {
        "description": "bench/stop.py",
        "scripts": [
            {"name": "long", "match": [LONG], "steps": [step(2000)]},
            {"name": "short", "match": [SHORT], "steps": [step(DELTAS_BEFORE_STOP)]},
        ],
        "fallback": {"steps": [step(1)]},
    }


def full_text(count: int) -> str:
    return "".join(f"w{i} " for i in range(count))


@dataclass
class Tab:
    """One SSE stream read in a thread: when each chunk type first arrived, the text, the deltas after the end."""

    deltas: int = 0
    text: str = ""
    ended_at: dict[str, float] = field(default_factory=dict[str, float])
    last_delta_at: float = 0.0
    deltas_after_end: int = 0
    seen: threading.Condition = field(default_factory=threading.Condition)
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def read(self, client: httpx.Client, method: str, url: str, **options: Any) -> Tab:
        def run() -> None:
            decoder = SseDecoder()
            try:
                with client.stream(method, url, **options) as response:
                    response.raise_for_status()
                    for piece in response.iter_text():
                        now = time.perf_counter()
                        for event in decoder.feed(piece):
                            if event.data != "[DONE]":
                                self._chunk(loads_strict(event.data), now)
            except BaseException as error:  # reported by the run that waits on this tab
                self.error = error
            finally:
                self.done.set()
                with self.seen:
                    self.seen.notify_all()

        threading.Thread(target=run, daemon=True).start()
        return self

    def _chunk(self, chunk: dict[str, Any], now: float) -> None:
        kind = chunk.get("type")
        with self.seen:
            if kind == "text-delta":
                if self.ended_at:
                    self.deltas_after_end += 1
                self.deltas += 1
                self.text += chunk["delta"]
                self.last_delta_at = now
            elif kind in ("abort", "finish", "error"):
                self.ended_at.setdefault(str(kind), now)
            self.seen.notify_all()

    def wait(self, condition: Any, what: str, timeout: float = 60) -> None:
        with self.seen:
            if not self.seen.wait_for(lambda: condition() or self.done.is_set(), timeout) or not condition():
                raise RuntimeError(f"timed out waiting for {what} (error: {self.error!r})")


def body(chat_id: str, text: str) -> dict[str, Any]:
    message = {"id": f"u-{chat_id}", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": chat_id, "messages": [message], "trigger": "submit-message"}


def active_run(client: httpx.Client, url: str, chat_id: str) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = client.get(f"{url}/api/conversations/{chat_id}")
        if found.status_code == 200 and (run_id := found.json()["activeRunId"]):
            return str(run_id)
        time.sleep(0.01)
    raise RuntimeError(f"{chat_id} has no active run")


def stored_answer(client: httpx.Client, url: str, chat_id: str) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = client.get(f"{url}/api/conversations/{chat_id}").json()
        if found["activeRunId"] is None:
            answer = found["messages"][-1]
            return "".join(p.get("text", "") for p in answer["parts"] if p["type"] == "text")
        time.sleep(0.02)
    raise RuntimeError(f"{chat_id} never settled")


@dataclass
class Stop:
    latencies: list[float]  # abort POST sent -> abort chunk, per tab
    post: float  # the abort POST's own round trip
    kept_ok: bool
    deltas_after: int


def attach(client: httpx.Client, url: str, chat_id: str, text: str) -> tuple[Tab, Tab]:
    tab_a = Tab().read(client, "POST", f"{url}/api/chat", json=body(chat_id, text))
    tab_a.wait(lambda: tab_a.deltas >= 1, f"{chat_id}: tab A's first delta")
    tab_b = Tab().read(client, "GET", f"{url}/api/chat/{chat_id}/stream")
    tab_b.wait(lambda: tab_b.deltas >= 1, f"{chat_id}: tab B's first delta")
    return tab_a, tab_b


def one_stop(client: httpx.Client, url: str, chat_id: str) -> Stop:
    tab_a, tab_b = attach(client, url, chat_id, LONG)
    for tab in (tab_a, tab_b):
        tab.wait(lambda t=tab: t.deltas >= DELTAS_BEFORE_STOP, f"{chat_id}: {DELTAS_BEFORE_STOP} deltas")
    run_id = active_run(client, url, chat_id)
    with httpx.Client(timeout=30) as other_device:
        seen_before = max(len(tab_a.text), len(tab_b.text))
        t0 = time.perf_counter()
        response = other_device.post(f"{url}/api/runs/{run_id}/abort")
        post = time.perf_counter() - t0
    response.raise_for_status()
    for tab in (tab_a, tab_b):
        tab.wait(lambda t=tab: "abort" in t.ended_at, f"{chat_id}: the abort chunk")
        tab.done.wait(30)
    kept = stored_answer(client, url, chat_id)
    kept_ok = len(kept) >= seen_before and full_text(2000).startswith(kept)
    return Stop(
        [tab.ended_at["abort"] - t0 for tab in (tab_a, tab_b)],
        post,
        kept_ok,
        tab_a.deltas_after_end + tab_b.deltas_after_end,
    )


def natural_end(client: httpx.Client, url: str, chat_id: str) -> float:
    """The reference: a run that ends by itself, its last delta to its finish chunk on the attached tab."""
    _, tab_b = attach(client, url, chat_id, SHORT)
    tab_b.wait(lambda: "finish" in tab_b.ended_at, f"{chat_id}: finish")
    return tab_b.ended_at["finish"] - tab_b.last_delta_at


def health(client: httpx.Client, url: str) -> float:
    t0 = time.perf_counter()
    client.get(f"{url}/api/health").raise_for_status()
    return time.perf_counter() - t0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def row(label: str, values: list[float]) -> str:
    p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
    return f"| {label} | {p50 * 1000:.0f} | {p95 * 1000:.0f} | {max(values) * 1000:.0f} | {len(values)} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="stops measured (default 20), after one warm-up")
    parser.add_argument("--pace", type=float, default=10, help="ms between the model's text deltas (default 10)")
    parser.add_argument("--backend", choices=["sqlite", "memory"], default="sqlite")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        book_path = Path(tmp) / "stop-book.json"
        book_path.write_text(json.dumps(book(args.pace)), encoding="utf-8")
        (Path(tmp) / "no-web").mkdir()
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "shared"),
            "STEPLINE_MODEL": f"scripted:{book_path}",
            "STEPLINE_WEB_DIST": str(Path(tmp) / "no-web"),  # no UI build: the API only
        }
        env.pop("STEPLINE_DEV_TOKENS", None)
        storage = ["--data", str(Path(tmp) / "data")] if args.backend == "sqlite" else ["--memory"]
        stops: list[Stop] = []
        ends: list[float] = []
        rtts: list[float] = []
        with (
            server([sys.executable, "-m", "stepline.cli", "dev", *storage], env) as url,
            httpx.Client(timeout=httpx.Timeout(30, read=None)) as client,
        ):
            one_stop(client, url, "warm-stop")
            natural_end(client, url, "warm-end")
            for n in range(args.runs):
                stops.append(one_stop(client, url, f"stop-{n}"))
                ends.append(natural_end(client, url, f"end-{n}"))
                rtts += [health(client, url) for _ in range(5)]
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    latencies = [s for stop in stops for s in stop.latencies]
    print(
        f"Python {sys.version.split()[0]}, stepline dev ({args.backend}), load average {load};"
        f" {args.runs} stops (after one warm-up), two attached streams each, the model at {args.pace:g} ms per delta"
    )
    print("\n| ms | p50 | p95 | max | n |\n|---|---|---|---|---|")
    print(row("Stop from another client: abort POST sent -> abort chunk, each attached stream", latencies))
    print(row("the abort POST's own round trip", [s.post for s in stops]))
    print(row("reference: a run ending by itself, last delta -> finish chunk", ends))
    print(row("reference: GET /api/health round trip", rtts))
    kept = sum(s.kept_ok for s in stops)
    after = sum(s.deltas_after for s in stops)
    p95 = percentile(latencies, 0.95)
    print(f"\npartial text kept: {kept}/{len(stops)} runs; text deltas after an abort chunk: {after}")
    print(f"target p95 <= 2000 ms: {p95 * 1000:.0f} ms {'met' if p95 <= 2.0 else 'MISSED'}")
    print(f"wall time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
