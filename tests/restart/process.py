"""`stepline dev` as a user runs it: a separate process on a free port, over a data folder, stopped by a signal."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from stepline.llm.registry import DEMO_BOOK
from stepline.protocol.reducer import reduce_ui_message_stream
from stepline.protocol.sse import SseDecoder, decode_ui_message_stream
from tests.restart.journal_tools import JOURNAL_VARIABLE

REPO = Path(__file__).resolve().parents[2]
START_SECONDS = 60
STOP_SECONDS = 10
"""SIGTERM must end the process within a few seconds (issue 12 §4); kill -9 ends it at once."""

WORK_SLOWLY: dict[str, Any] = {
    "name": "work-slowly",
    "match": ["slowly"],
    "steps": [
        {
            "delayMs": 5,
            "parts": [
                {"type": "stream-start", "warnings": []},
                {"type": "tool-call", "toolCallId": "call-list", "toolName": "list_files", "input": "{}"},
                {
                    "type": "finish",
                    "finishReason": {"unified": "tool-calls", "raw": "tool_use"},
                    "usage": {"inputTokens": {"total": 5}, "outputTokens": {"total": 3}},
                },
            ],
        },
        {
            "delayMs": 100,
            "parts": [
                {"type": "stream-start", "warnings": []},
                {"type": "text-start", "id": "t1"},
                *[{"type": "text-delta", "id": "t1", "delta": f"word{i} "} for i in range(30)],
                {"type": "text-end", "id": "t1"},
                {
                    "type": "finish",
                    "finishReason": {"unified": "stop", "raw": "stop"},
                    "usage": {"inputTokens": {"total": 9}, "outputTokens": {"total": 30}},
                },
            ],
        },
    ],
}
"""A completed tool step, then a text step slow enough (3 s) to be cut by a stop."""


GATED: dict[str, Any] = {
    "name": "gated",
    "match": ["gated"],
    "steps": [
        {
            "parts": [
                {"type": "stream-start", "warnings": []},
                {"type": "text-start", "id": "t0"},
                {"type": "text-delta", "id": "t0", "delta": "Starting the gated step."},
                {"type": "text-end", "id": "t0"},
                {
                    "type": "tool-call",
                    "toolCallId": "call-gated",
                    "toolName": "gated_step",
                    "input": '{"label": "one"}',
                },
                {"type": "finish", "finishReason": {"unified": "tool-calls", "raw": "tool_use"}, "usage": {}},
            ]
        },
        {
            "parts": [
                {"type": "text-start", "id": "t1"},
                {"type": "text-delta", "id": "t1", "delta": "The gated step is done."},
                {"type": "text-end", "id": "t1"},
                {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}},
            ]
        },
    ],
}
"""A text, then `gated_step` (`tests.restart.control_tools`: it lasts until the test opens its gate), then a text."""


def write_book(path: Path) -> str:
    book = json.loads(DEMO_BOOK.read_text())
    book["scripts"][:0] = [WORK_SLOWLY, GATED]
    path.write_text(json.dumps(book))
    return f"scripted:{path}"


@dataclass
class DevProcess:
    """One `stepline dev` process; `url` once its banner is printed."""

    process: subprocess.Popen[bytes]
    log: Path
    url: str = ""

    def banner(self) -> str:
        return self.log.read_text(errors="replace")

    def client(self, **options: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, **{"timeout": 30, **options})

    def stop(self, sig: signal.Signals) -> int:
        """Send `sig` and wait for the process to end; returns its exit status."""
        self.process.send_signal(sig)
        return self.process.wait(timeout=STOP_SECONDS)


def start_dev(
    data_dir: Path, work: Path, *, journal: Path, model: str, extra_env: dict[str, str] | None = None
) -> DevProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPLINE_", "AWS_"))}
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(REPO / "shared"), str(REPO)]),
            "STEPLINE_MODEL": model,
            "STEPLINE_TOOLS": "tests.restart.journal_tools",
            "STEPLINE_APPROVAL_TIMEOUT_SECONDS": "3600",
            JOURNAL_VARIABLE: str(journal),
            **(extra_env or {}),
        }
    )
    log = work / f"dev-{time.monotonic_ns()}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "stepline.cli", "dev", "--port", "0", "--data", str(data_dir)],
            cwd=work,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    dev = DevProcess(process, log)
    deadline = time.monotonic() + START_SECONDS
    while not (found := re.search(r"Stepline is running at (http://\S+)", dev.banner())):
        assert process.poll() is None, f"stepline dev exited: {dev.banner()}"
        assert time.monotonic() < deadline, f"stepline dev not up: {dev.banner()}"
        time.sleep(0.05)
    dev.url = found.group(1)
    return dev


@contextmanager
def serving(
    data_dir: Path, work: Path, *, journal: Path, model: str, extra_env: dict[str, str] | None = None
) -> Generator[DevProcess]:
    """`start_dev`, stopped with SIGTERM on the way out unless the test killed it already."""
    dev = start_dev(data_dir, work, journal=journal, model=model, extra_env=extra_env)
    try:
        yield dev
    finally:
        try:
            if dev.process.poll() is None:
                dev.stop(signal.SIGTERM)
        finally:
            if dev.process.poll() is None:
                dev.process.kill()


@dataclass
class Follower:
    """Reads one SSE response in a thread, frame by frame, until the server ends it."""

    frames: list[tuple[str | None, str]] = field(default_factory=list[tuple[str | None, str]])
    error: BaseException | None = None
    status: int | None = None
    """The response's status, once its headers arrived (`answered` is set then)."""
    answered: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)
    _new: threading.Condition = field(default_factory=threading.Condition)

    def follow(self, client: httpx.Client, method: str, path: str, **options: Any) -> Follower:
        def read() -> None:
            decoder = SseDecoder()
            try:
                with client.stream(method, path, **options) as response:
                    self.status = response.status_code
                    self.answered.set()
                    for text in response.iter_text():
                        for event in decoder.feed(text):
                            with self._new:
                                self.frames.append((event.id, event.data))
                                self._new.notify_all()
            except httpx.HTTPError as error:  # a killed server cuts the connection: the end of this stream
                self.error = error
            finally:
                self.ended.set()
                with self._new:
                    self._new.notify_all()

        threading.Thread(target=read, daemon=True).start()
        return self

    def wait_for(self, fragment: str, timeout: float = 30) -> None:
        def seen() -> bool:
            return any(fragment in d for _, d in self.frames)

        with self._new:
            self._new.wait_for(lambda: seen() or self.ended.is_set(), timeout)
        assert seen(), f"no {fragment!r} in {self.frames[-3:]}"

    def chunks_text(self) -> str:
        """The frames as an SSE body again (for the decoder and the reducer)."""
        return "".join((f"id: {i}\n" if i else "") + f"data: {d}\n\n" for i, d in self.frames)

    def last_id(self) -> str:
        return next(i for i, _ in reversed(self.frames) if i is not None)


def resume(client: httpx.Client, chat: str, cut: Follower) -> Follower:
    """A tab that was cut by the kill follows `chat` again from the last event it saw (`Last-Event-ID`)."""
    return Follower().follow(client, "GET", f"/api/chat/{chat}/stream", headers={"last-event-id": cut.last_id()})


def assert_resumed_whole(cut: Follower, resumed: Follower, stored: dict[str, Any]) -> None:
    """The cut stream and its resumption end the run, no event twice, and make the stored message."""
    assert resumed.ended.wait(60) and resumed.error is None
    assert resumed.frames[-1] == (None, "[DONE]")
    ids = [i for i, _ in cut.frames + resumed.frames if i is not None]
    assert len(ids) == len(set(ids)), "no event is sent twice across the restart"
    stream = reduce_ui_message_stream(decode_ui_message_stream(cut.chunks_text() + resumed.chunks_text()))
    assert stream.error is None and stream.message is not None
    assert stream.message["parts"] == stored["parts"]


def poll(condition: Any, what: str, timeout: float = 30) -> Any:
    """Wait until `condition()` is truthy (a condition, not a sleep); returns its value."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def journal_lines(journal: Path) -> list[str]:
    return journal.read_text().splitlines() if journal.exists() else []
