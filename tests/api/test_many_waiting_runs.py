"""Many runs parked on approvals at once, on the dev server: no thread per waiting run or open stream.

The dev server as `stepline dev` runs it (a data folder, the local engine), in this process.

Issue 16's class of failure: moto's Step Functions interpreter held three threads for each run
waiting on a task token (640 threads for 200 parked runs), so the dev server's threads grew with
the conversations that wait for a person. Here N conversations ask for an approval at once; each
client reads its POST to `[DONE]`, opens the resume stream from the last id it read and keeps it
open. With all N parked (the engine holds N live executions), the threads the server started for
them are counted, with no timing involved: the bound is the engine's worker pool and the API's
thread limit, not N. Then every approval is decided, every resumed stream is read to its end,
and each run's SSE ids over both streams must be exactly `1.0, 1.1, …` (nothing lost, nothing
twice) and reduce to the stored message.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepline.local.dev import API_THREADS
from stepline.local.engine import STEP_WORKERS, LocalStepFunctions
from stepline.protocol.chunks import parse_chunk
from stepline.protocol.reducer import reduce_ui_message_stream
from stepline.protocol.sse import SseDecoder
from tests.support.server import Running, config, running, write_book

RUNS = 50
OWN_THREADS = 2
"""Besides the pool and the API's: the engine's timer thread, and one spare."""
USAGE = {"inputTokens": {"total": 5}, "outputTokens": {"total": 5}}
WRITE = '{"path": "notes/n.md", "content": "hi"}'
BOOK: dict[str, Any] = {
    "name": "approve",
    "match": ["approve"],
    "steps": [
        [
            {"type": "stream-start", "warnings": []},
            {"type": "tool-call", "toolCallId": "call-w", "toolName": "write_file", "input": WRITE},
            {"type": "finish", "finishReason": {"unified": "tool-calls", "raw": "tool_use"}, "usage": USAGE},
        ],
        [
            {"type": "stream-start", "warnings": []},
            {"type": "text-start", "id": "t1"},
            *[{"type": "text-delta", "id": "t1", "delta": f"w{i} "} for i in range(5)],
            {"type": "text-end", "id": "t1"},
            {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": USAGE},
        ],
    ],
}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Running]:
    with running(config(write_book(tmp_path / "book.json", [BOOK])), data_dir=tmp_path / "data") as live:
        yield live


async def read_stream(response: httpx.Response, ids: list[str], chunks: list[Any]) -> None:
    assert response.status_code == 200, response.status_code
    decoder, done = SseDecoder(), False
    async for text in response.aiter_text():
        for event in decoder.feed(text):
            if event.data == "[DONE]":
                done = True
                continue
            ids.append(event.id or "")
            chunks.append(parse_chunk(json.loads(event.data)))
    assert done, "the stream ended without [DONE]"


async def acquire(semaphore: asyncio.Semaphore, count: int) -> None:
    for _ in range(count):
        await semaphore.acquire()


def assert_exactly_once(ids: list[str]) -> None:
    """Each id the next index of its seq, or index 0 of the next seq: no gap, no repeat."""
    seq, index = 1, 0
    for given in ids:
        got = tuple(int(n) for n in given.split("."))
        assert got in ((seq, index), (seq + 1, 0)), f"{given} after {seq}.{index - 1}"
        seq, index = got[0], got[1] + 1


def test_parked_runs_hold_no_thread_and_every_event_arrives_once(server: Running) -> None:
    engine = server.server.backend.orchestrator
    assert isinstance(engine, LocalStepFunctions)
    before = {t.ident for t in threading.enumerate()}
    parked = asyncio.Semaphore(0)
    decide = asyncio.Event()
    counted: list[int] = []

    async def conversation(client: httpx.AsyncClient, n: int) -> None:
        chat, ids, chunks = f"wait-{n}", list[str](), list[Any]()
        body = {
            "id": chat,
            "messages": [{"id": f"u{n}", "role": "user", "parts": [{"type": "text", "text": "approve"}]}],
            "trigger": "submit-message",
        }
        async with client.stream("POST", "/api/chat", json=body) as response:
            await read_stream(response, ids, chunks)
        request = next(c for c in chunks if c.type == "tool-approval-request")
        headers = {"last-event-id": ids[-1]}
        async with client.stream("GET", f"/api/chat/{chat}/stream", headers=headers) as resumed:
            parked.release()
            await decide.wait()
            decided = await client.post(f"/api/approvals/{request.approval_id}", json={"approved": True})
            assert decided.status_code == 200, decided.text
            await read_stream(resumed, ids, chunks)
        assert_exactly_once(ids)
        stored = (await client.get(f"/api/conversations/{chat}")).json()["messages"][-1]
        reduced = reduce_ui_message_stream(chunks)
        assert reduced.error is None
        assert reduced.message is not None and reduced.message["id"] == stored["id"]
        assert reduced.message["parts"] == stored["parts"]
        assert stored["parts"][-1] == {"type": "text", "text": "w0 w1 w2 w3 w4 ", "state": "done"}

    async def main() -> None:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        async with httpx.AsyncClient(base_url=server.url, timeout=60, limits=limits) as client:
            runs = [asyncio.create_task(conversation(client, n)) for n in range(RUNS)]
            all_parked = asyncio.create_task(acquire(parked, RUNS))
            await asyncio.wait([all_parked, *runs], return_when=asyncio.FIRST_COMPLETED)
            for run in runs:
                if run.done():  # it ended before any decision: it failed; raise its error
                    run.result()
            assert engine.running() == RUNS  # all N executions are alive, parked on their tokens
            counted.append(sum(t.ident not in before for t in threading.enumerate()))
            decide.set()
            await asyncio.gather(*runs)

    asyncio.run(main())
    assert counted[0] <= STEP_WORKERS + API_THREADS + OWN_THREADS < RUNS
