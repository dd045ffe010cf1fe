"""The cap on working runs per user (`user_working_runs`), on `stepline dev` over a data folder (SQLite).

GIVEN a deployment allowing each user one working run and no wait for a slot, WHEN a user's run
works and they start another (a run or a chat), THEN it is a 429 with `Retry-After` and a JSON
body naming the limit, nothing is started, and another user is not affected; the slot comes back
when the run is aborted, when it parks on an approval, and when it completes (each time a new
start is accepted). With the wait (the default), a run and a chat sent while the user's run works
wait for its slot, and start (202, the chat's answer streamed) once it ends; past the wait, a 429.
A crashed run's slot (a lease never released) is in tests/unit/budget/test_run_slots.py; the
line's order in tests/unit/budget/test_slot_waits.py.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepline.store.run_slots import SlotKey
from tests.api.test_chat_api import send
from tests.api.test_many_waiting_runs import BOOK as APPROVE
from tests.support.server import Running, config, running, write_book
from tests.unit.loop.support import finish, text

SLOW: dict[str, Any] = {  # one delta, then a long pause: the run works until it is aborted
    "name": "slow",
    "match": ["slow"],
    "steps": [
        {
            "parts": [{"type": "stream-start", "warnings": []}, *text("t", "a ", "b"), finish()],
            "delaysMs": [0, 0, 0, 60_000, 0, 0],
        }
    ],
}


def _server(tmp_path: Path, **limits: object) -> Iterator[Running]:
    model = write_book(tmp_path / "cap-book.json", [SLOW, APPROVE], fallback=[[*text("t", "Hello."), finish()]])
    cfg = config(
        model,
        tokens={"token-a": "user-a", "token-b": "user-b"},
        STEPLINE_LIMITS=json.dumps({"userWorkingRuns": 1, **limits}),
    )
    with running(cfg, data_dir=tmp_path / "data") as live:
        yield live


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Running]:
    yield from _server(tmp_path, workingRunsWaitSeconds=0)


@pytest.fixture
def waiting_server(tmp_path: Path) -> Iterator[Running]:
    yield from _server(tmp_path, workingRunsWaitSeconds=60)


def _start(client: httpx.Client, text_: str) -> httpx.Response:
    return client.post("/api/runs", json={"input": text_})


def _wait_run(client: httpx.Client, run_id: str, status: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while (found := client.get(f"/api/runs/{run_id}").json()["status"]) != status:
        assert time.monotonic() < deadline, f"run {run_id} stayed {found}"
        time.sleep(0.05)


def test_a_second_working_run_is_429_until_the_first_aborts_parks_or_completes(server: Running) -> None:
    with server.client("user-a") as a, server.client("user-b") as b:
        slow = _start(a, "slow")
        assert slow.status_code == 202, slow.text
        refused = _start(a, "hi")
        refused_chat = send(a, "cap-chat", "hello")
        assert b.post("/api/runs", json={"input": "hi"}).status_code == 202  # user-b's slots are their own
        for response in (refused, refused_chat):
            assert response.status_code == 429, response.text
            assert response.headers["retry-after"] in {"1", "2", "3"}
            error = response.json()["error"]
            assert error["status"] == 429 and "user_working_runs is 1" in error["message"]
        assert a.get("/api/conversations/cap-chat").status_code == 404  # the refused chat started nothing

        assert a.post(f"/api/runs/{slow.json()['runId']}/abort").status_code == 200
        parked = _start(a, "approve")  # aborted: its slot came back
        assert parked.status_code == 202, parked.text
        _wait_run(a, parked.json()["runId"], "waiting_approval")
        quick = _start(a, "hi")  # parked on an approval: its slot came back
        assert quick.status_code == 202, quick.text
        _wait_run(a, quick.json()["runId"], "completed")
        again = _start(a, "hi")  # completed: its slot came back
        assert again.status_code == 202, again.text


def test_a_run_and_a_chat_past_the_cap_wait_for_the_slot_and_start_when_it_frees(waiting_server: Running) -> None:
    waits = waiting_server.server.backend.services.slot_waits
    with waiting_server.client("user-a") as a, ThreadPoolExecutor(2) as pool:
        slow = _start(a, "slow")
        assert slow.status_code == 202, slow.text
        run = pool.submit(_start, a, "hi")
        chat = pool.submit(send, a, "waiting-chat", "hello")
        deadline = time.monotonic() + 30
        while waits.waiting(SlotKey("user", "user-a")) < 2:  # both wait in user-a's line
            assert time.monotonic() < deadline and not run.done() and not chat.done()
            time.sleep(0.02)
        assert a.get("/api/conversations/waiting-chat").status_code == 404  # nothing started while it waits
        assert a.post(f"/api/runs/{slow.json()['runId']}/abort").status_code == 200
        started, answered = run.result(timeout=60), chat.result(timeout=60)
        assert started.status_code == 202, started.text
        _wait_run(a, started.json()["runId"], "completed")
    assert answered.status_code == 200, answered.text
    assert "Hello." in answered.text and waits.waiting(SlotKey("user", "user-a")) == 0


def test_past_its_wait_a_run_gets_the_429(tmp_path: Path) -> None:
    with (
        contextlib.contextmanager(_server)(tmp_path, workingRunsWaitSeconds=0.3) as server,
        server.client("user-a") as a,
    ):
        slow = _start(a, "slow")
        refused = _start(a, "hi")
        assert refused.status_code == 429 and refused.headers["retry-after"] in {"1", "2", "3"}, refused.text
        assert "user_working_runs is 1" in refused.json()["error"]["message"]
        listed = a.get("/api/conversations").json()["conversations"]
        assert [c["id"] for c in listed] == [slow.json()["conversationId"]]  # the refused run started nothing
        assert server.server.backend.services.slot_waits.waiting(SlotKey("user", "user-a")) == 0
