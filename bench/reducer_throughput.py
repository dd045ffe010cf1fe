"""Reducer throughput: Stepline against the AI SDK on the same inputs, in one run.

    .venv/bin/python bench/reducer_throughput.py [--quick]

Workloads (bench/workloads.py and workloads.mjs build identical chunk lists; the script checks
their hashes): 100,000 text deltas, and a 1 MB tool input streamed in 10,000 deltas, each also at
half size for the size-doubling ratio (time at n / time at n/2; 2.0 is linear, 4.0 quadratic).

Paths timed (best of 3; the SDK's large tool-input runs once, as it takes minutes):
- Stepline `reduce_ui_message_stream` on validated chunks (what the server does to persist a run);
- the SDK's server path: `createUIMessageStream` + `onEnd` (the same job, no snapshots);
- the SDK's client path: `readUIMessageStream` (a snapshot per visible change).
Stepline's chunk validation (`parse_chunk`, the cost of reading chunks off the wire) is timed too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workloads import text_deltas, tool_input_deltas  # noqa: E402

from stepline.protocol.chunks import parse_chunk  # noqa: E402
from stepline.protocol.reducer import reduce_ui_message_stream  # noqa: E402


def best(fn: Callable[[], Any], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def sdk(workload: str, n: int, size: int = 0) -> dict[str, float]:
    args = ["node", str(HERE / "sdk_reduce.mjs"), workload, str(n), str(size)]
    # The SDK re-parses the whole tool input on every delta (quadratic): one repeat is enough there.
    env = {**os.environ, "BENCH_REPEATS": "1" if size >= 200_000 else "3"}
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True, env=env).stdout)


def check_same_input(chunks: list[dict[str, Any]], workload: str, n: int, size: int) -> None:
    ours = hashlib.sha256(json.dumps(chunks, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
    script = (
        f"import('{(HERE / 'workloads.mjs').as_uri()}').then(w => {{"
        f"const c = '{workload}' === 'text' ? w.textDeltas({n}) : w.toolInputDeltas({size}, {n});"
        "console.log(require('crypto').createHash('sha256').update(JSON.stringify(c)).digest('hex'))})"
    )
    theirs = subprocess.run(["node", "-e", script], check=True, capture_output=True, text=True).stdout.strip()
    if ours != theirs:
        raise SystemExit(f"workload {workload} differs between Python and Node")


def measure(label: str, workload: str, n: int, size: int = 0) -> dict[str, float]:
    raw = text_deltas(n) if workload == "text" else tool_input_deltas(size, n)
    check_same_input(raw, workload, n, size)
    chunks = [parse_chunk(c) for c in raw]
    result = reduce_ui_message_stream(chunks)
    assert result.message is not None and result.error is None
    ours = best(lambda: reduce_ui_message_stream(chunks))
    parse = best(lambda: [parse_chunk(c) for c in raw], repeats=1)
    theirs = sdk(workload, n, size)
    row = {
        "chunks": len(raw),
        "stepline": ours,
        "parse": parse,
        "sdk_server": theirs["server"],
        "sdk_client": theirs["client"],
    }
    print(
        f"{label:<34} {len(raw):>8} chunks | Stepline {ours * 1e3:9.1f} ms ({len(raw) / ours:>10,.0f} chunks/s)"
        f" | SDK server {theirs['server'] * 1e3:9.1f} ms ({theirs['server'] / ours:5.1f}x)"
        f" | SDK readUIMessageStream {theirs['client'] * 1e3:9.1f} ms ({theirs['client'] / ours:5.1f}x)"
        f" | + parse_chunk {parse * 1e3:7.1f} ms"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes (for a smoke run)")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    deltas, size, tool_deltas = 100_000 // scale, 1_000_000 // scale, 10_000 // scale
    print(f"Python {sys.version.split()[0]}, ratios are SDK time / Stepline time (higher: Stepline faster)")
    text_half = measure(f"text, {deltas // 2:,} deltas", "text", deltas // 2)
    text_full = measure(f"text, {deltas:,} deltas", "text", deltas)
    tool_half = measure(f"tool input {size // 2:,} B / {tool_deltas // 2:,}", "tool", tool_deltas // 2, size // 2)
    tool_full = measure(f"tool input {size:,} B / {tool_deltas:,}", "tool", tool_deltas, size)
    print("size-doubling ratio (time at n / time at n/2; 2.0 = linear):")
    for name, half, full in (("text", text_half, text_full), ("tool input", tool_half, tool_full)):
        print(
            f"  {name:<10} Stepline {full['stepline'] / half['stepline']:.2f}"
            f" | SDK server {full['sdk_server'] / half['sdk_server']:.2f}"
            f" | SDK readUIMessageStream {full['sdk_client'] / half['sdk_client']:.2f}"
        )


if __name__ == "__main__":
    main()
