"""Engine overhead: Stepline's loop against the AI SDK's streamText on the same scripted output.

    .venv/bin/python bench/loop_overhead.py [--quick]

Both sides play identical scripts (bench/loop_workloads.py/.mjs) through a scripted model (the SDK
through `MockLanguageModelV4`), run a no-op tool, and consume the UI message stream to the end.
- per-step overhead: N steps of one tool call each, then a text step; time / (N + 1);
- per-chunk overhead: one step of N text deltas; time / N.
Best of 3 on each side; the ratio is SDK time / Stepline time (above 1: Stepline is faster).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from loop_workloads import chunks_script, steps_script  # noqa: E402

from stepline.llm.scripted import ScriptedModel  # noqa: E402
from stepline.loop.stop import is_step_count  # noqa: E402
from stepline.loop.stream_text import stream_text  # noqa: E402
from stepline.loop.tools import Tool  # noqa: E402


async def _noop(_: Any) -> dict[str, bool]:
    return {"ok": True}


async def run_once(script: list[list[dict[str, Any]]]) -> int:
    model = ScriptedModel.from_script(script)
    result = stream_text(
        model=model,
        prompt="bench",
        tools=[Tool(name="noop", input_schema={"type": "object"}, execute=_noop)],
        stop_when=is_step_count(len(script)),
    )
    count = 0
    async for _ in result.ui_message_stream():
        count += 1
    model.assert_consumed()
    return count


def stepline_seconds(script: list[list[dict[str, Any]]]) -> tuple[float, int]:
    best, chunks = float("inf"), 0
    for _ in range(3):
        start = time.perf_counter()
        chunks = asyncio.run(run_once(script))
        best = min(best, time.perf_counter() - start)
    return best, chunks


def sdk_seconds(workload: str, n: int) -> tuple[float, int]:
    out = subprocess.run(
        ["node", str(HERE / "sdk_stream_text.mjs"), workload, str(n)], check=True, capture_output=True, text=True
    )
    data = json.loads(out.stdout)
    return data["seconds"], data["uiChunks"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    steps = 20 if args.quick else 200
    deltas = 10_000 if args.quick else 100_000
    print(f"Python {sys.version.split()[0]}; ratio = SDK time / Stepline time (above 1: Stepline is faster)")
    ours, our_chunks = stepline_seconds(steps_script(steps))
    theirs, their_chunks = sdk_seconds("steps", steps)
    print(
        f"per step  ({steps} tool steps + 1): Stepline {ours / (steps + 1) * 1e6:8.1f} µs | "
        f"SDK streamText {theirs / (steps + 1) * 1e6:8.1f} µs | ratio {theirs / ours:5.2f}"
        f" | UI chunks {our_chunks} vs {their_chunks}"
    )
    ours, our_chunks = stepline_seconds(chunks_script(deltas))
    theirs, their_chunks = sdk_seconds("chunks", deltas)
    print(
        f"per chunk ({deltas:,} text deltas):  Stepline {ours / deltas * 1e6:8.2f} µs | "
        f"SDK streamText {theirs / deltas * 1e6:8.2f} µs | ratio {theirs / ours:5.2f}"
        f" | UI chunks {our_chunks} vs {their_chunks}"
    )


if __name__ == "__main__":
    main()
