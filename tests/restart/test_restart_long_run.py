"""A run far longer than its model's window survives kill -9 of `stepline dev` in and right after a compaction.

The agent (`tests.restart.long_run_agents`) reads parts 1..N with a tool whose outputs are 100 KB
each, its model OpenAI's Chat Completions through the real `openai` SDK, served by a fake the test
runs (`tests.restart.long_run_model.LongWire`): it refuses any request over its 32k-token window,
measured at the wire by tiktoken over the request's JSON, and any request with a tool call apart
from its result, and journals every request it receives, across every server the test starts.

The server is killed with SIGKILL twice on one data folder: while the second compaction's summarizer
request is in flight (held by the fake), and right after the third compaction step completed (its
summary in the run's stream, the next step's model request held). Then the run completes on a third
server, and: no request ever exceeded the window and every one kept each tool call with its result;
each compaction happened exactly once (the one killed mid-way redone with the same request, the one
killed after it never asked again; the summaries stored equal the summaries answered); each part was
read once; the final message is the stored one and the one the whole stream reduces to; resuming
after a position gives exactly the rest.

N is `STEPLINE_TEST_LONG_STEPS`, `SUITE_STEPS` (80) in the suite: a 500-step run takes minutes.
Measured on 2 cores shared with other work (load 13-18; `-s` prints the figures): 80 steps in
1-2.5 min, 4 compactions, 87 requests, the largest 25,736 tokens; 500 steps in 12 min, 32
compactions, 535 requests (500 steps, the answer, 32 summaries, the two held), the largest 25,769.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepline.protocol.reducer import reduce_ui_message_stream
from stepline.protocol.sse import decode_ui_message_stream
from stepline.store.history import SUMMARY_PART
from tests.restart.long_run_model import STEPS_VARIABLE, URL_VARIABLE, Hold, LongWire, WireRequest
from tests.restart.process import DevProcess, Follower, journal_lines, poll, start_dev
from tests.support.fake_openai import FakeOpenAI

SUITE_STEPS = 80
"""The suite's length; `STEPLINE_TEST_LONG_STEPS=500` runs the issue's."""
CHAT = "long-kill"
Frames = list[tuple[str | None, str]]


def steps() -> int:
    return int(os.environ.get(STEPS_VARIABLE) or SUITE_STEPS)


RUN_SECONDS = 300 + 4 * steps()
"""The most the run's rest may take after the last start (a step takes well under a second)."""
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2 * RUN_SECONDS)]


@pytest.fixture
def wire() -> Iterator[tuple[LongWire, FakeOpenAI]]:
    model = LongWire(steps())
    with FakeOpenAI(responses_api=False, responder=model) as fake:
        yield model, fake


def get(client: httpx.Client, path: str) -> dict[str, Any]:
    response = client.get(path)
    assert response.status_code == 200, response.text
    return response.json()


def sse(frames: Frames) -> str:
    return "".join((f"id: {i}\n" if i else "") + f"data: {d}\n\n" for i, d in frames)


def last_id(frames: Frames) -> str:
    return next(i for i, _ in reversed(frames) if i is not None)


def resumed_after(client: httpx.Client, position: str, seconds: float = 120) -> Frames | None:
    """The frames after `position` of the run's log, to its end; None for a 204 (nothing after it)."""
    follower = Follower().follow(client, "GET", f"/api/chat/{CHAT}/stream", headers={"last-event-id": position})
    assert follower.ended.wait(seconds) and follower.error is None, follower.error
    assert follower.status in (200, 204), follower.status
    return follower.frames if follower.status == 200 else None


def killed(dev: DevProcess, *cut: Follower) -> None:
    assert dev.stop(signal.SIGKILL) == -signal.SIGKILL
    assert all(f.ended.wait(10) for f in cut)


def held(hold: Hold, model: LongWire, dev: DevProcess) -> None:
    """Wait until the fake holds the request `hold` waits for (failing fast if the run ends first)."""
    poll(lambda: hold.reached.is_set() or model.finished() or dev.process.poll() is not None, "the held request", 600)
    assert hold.reached.is_set(), f"never held; the requests: {model.shape()}\n{dev.banner()[-2000:]}"


def kill_when_held(
    hold: Hold, model: LongWire, dev: DevProcess, follow: Callable[[httpx.Client], Follower], seen: str = ""
) -> Frames:
    """Follow the run on `dev` until the fake holds `hold`'s request (and the stream shows `seen`), then kill -9."""
    try:
        with dev.client(timeout=httpx.Timeout(30, read=None)) as client:
            follower = follow(client)
            held(hold, model, dev)
            if seen:
                follower.wait_for(seen)
            killed(dev, follower)
    finally:
        model.release(hold)
        if dev.process.poll() is None:
            dev.process.kill()
    return follower.frames


def second_summary(request: WireRequest, before: list[WireRequest]) -> bool:
    """The second compaction's summarizer request (one compaction answered before it)."""
    return request.kind == "summary" and sum(r.kind == "summary" and r.fate == "answered" for r in before) == 1


def step_after_third_summary(request: WireRequest, before: list[WireRequest]) -> bool:
    """The first model request of a step once the third compaction is answered (and checkpointed)."""
    answered = [r for r in before if r.fate == "answered"]
    return (
        request.kind == "step"
        and bool(answered)
        and answered[-1].kind == "summary"
        and (sum(r.kind == "summary" for r in answered) == 3)
    )


def test_a_long_run_survives_kill_9_in_and_right_after_a_compaction(
    tmp_path: Path, wire: tuple[LongWire, FakeOpenAI]
) -> None:
    model, fake = wire
    total = steps()
    journal = tmp_path / "tools.journal"
    env = {"STEPLINE_AGENT": "tests.restart.long_run_agents:AGENTS", URL_VARIABLE: fake.base_url}
    env[STEPS_VARIABLE] = str(total)

    def start() -> DevProcess:
        return start_dev(tmp_path / "data", tmp_path, journal=journal, model="scripted", extra_env=env)

    started = time.monotonic()
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": f"Read all {total} parts."}]}
    body = {"id": CHAT, "messages": [user], "trigger": "submit-message"}

    # 1. Killed while the second compaction's summarizer request is in flight.
    hold = model.hold(second_summary)
    frames = kill_when_held(
        hold, model, start(), lambda client: Follower().follow(client, "POST", "/api/chat", json=body)
    )
    run_id = json.loads(frames[0][1])["messageMetadata"]["runId"]
    assert f"summary-{run_id}-1" in sse(frames) and f"summary-{run_id}-2" not in sse(frames)

    # 2. Killed right after the third compaction step: its summary streamed, the next step's request held.
    hold = model.hold(step_after_third_summary)
    second = start()
    position = {"last-event-id": last_id(frames)}
    frames += kill_when_held(
        hold,
        model,
        second,
        lambda client: Follower().follow(client, "GET", f"/api/chat/{CHAT}/stream", headers=position),
        seen=f'"summary-{run_id}-3"',
    )
    assert "unfinished run" in second.banner(), "the second server drove the run on"

    # 3. Started again: the run goes on from the third compaction's checkpoint to its end.
    third = start()
    try:
        with third.client(timeout=httpx.Timeout(30, read=None)) as client:
            rest = resumed_after(client, last_id(frames), RUN_SECONDS)
            assert rest is not None and rest[-1] == (None, "[DONE]")
            frames += rest
            poll(lambda: get(client, f"/api/runs/{run_id}")["status"] == "completed", "the run completed", 60)
            stored = get(client, f"/api/conversations/{CHAT}")["messages"][-1]
            check_the_wire(model, total)
            check_the_message(model, stored, frames, run_id, total)
            check_the_replay(client, frames)
    finally:
        if third.process.poll() is None:
            third.stop(signal.SIGTERM)
    parts = [int(line.split()[-1]) for line in journal_lines(journal)]
    assert parts == list(range(1, total + 1)), "each part read once, in order"
    tokens = [r.tokens for r in model.journal]
    print(  # figures, shown with -s
        f"\n{total} steps in {time.monotonic() - started:.0f} s: {len(model.answered('summary'))} compactions, "
        f"{len(tokens)} requests, the largest {max(tokens)} tokens of {model.window}; {len(frames)} frames"
    )


def check_the_wire(model: LongWire, total: int) -> None:
    journal = model.journal
    assert [r for r in journal if r.fate == "refused"] == []
    assert max(r.tokens for r in journal) <= model.window, "no request over the window"
    assert all(r.unpaired == [] for r in journal), "every tool call with its result in every request"
    held = [r for r in journal if r.fate == "held"]
    assert [r.kind for r in held] == ["summary", "step"]
    summaries = [r for r in journal if r.kind == "summary" and r.fate == "answered"]
    assert len({r.digest for r in summaries}) == len(summaries), "no compaction asked twice once answered"
    assert held[0].digest == summaries[1].digest, "the compaction killed mid-way redone, with the same request"
    at = next(n for n, r in enumerate(journal) if r is held[1])
    assert journal[at - 1] is summaries[2], "held right after the third compaction was answered"
    redo = journal[at + 1]
    assert (redo.kind, redo.digest, redo.fate) == ("step", held[1].digest, "answered"), "its step redone, as sent"
    assert journal[-1].answer == f"All {total} parts are read."


def check_the_message(model: LongWire, stored: dict[str, Any], frames: Frames, run_id: str, total: int) -> None:
    summaries = [p for p in stored["parts"] if p["type"] == SUMMARY_PART]
    answered = model.answered("summary")
    assert len(summaries) == len(answered) >= 3, "each compaction stored once"
    assert [s["id"] for s in summaries] == [f"summary-{run_id}-{k}" for k in range(1, len(answered) + 1)]
    assert [s["data"]["summary"] for s in summaries] == [r.answer for r in answered]
    assert stored["metadata"]["context"]["compactions"] == len(answered)
    texts = [p["text"] for p in stored["parts"] if p["type"] == "text"]
    assert texts[-1] == f"All {total} parts are read."
    outputs = [p for p in stored["parts"] if p["type"] == "tool-read"]
    assert [p["input"]["part"] for p in outputs] == list(range(1, total + 1))
    assert all(len(p["output"]) == 100_000 for p in outputs), "the message keeps each output whole"
    stream = reduce_ui_message_stream(decode_ui_message_stream(sse(frames)))
    assert stream.error is None and stream.message is not None
    assert stream.message["parts"] == stored["parts"], "the whole stream reduces to the stored message"


def check_the_replay(client: httpx.Client, frames: Frames) -> None:
    positions = [i for i, _ in frames if i is not None]
    assert len(positions) == len(set(positions)), "each event once across the restarts"
    assert frames[-1] == (None, "[DONE]") and frames[-2][0] == positions[-1]
    for index in sorted({0, len(positions) // 3, len(positions) // 2, len(positions) - 2}):
        at = next(n for n, (i, _) in enumerate(frames) if i == positions[index])
        assert resumed_after(client, positions[index]) == frames[at + 1 :], f"resume after {positions[index]}"
    assert resumed_after(client, positions[-1]) is None, "after the finish nothing is left: 204"
