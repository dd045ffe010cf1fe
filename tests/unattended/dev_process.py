"""`stepline dev` as a process serving `tests.unattended.worker_agents`, and a local callback receiver."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.restart.process import REPO, START_SECONDS, DevProcess

SECRET = "whsec_" + base64.b64encode(b"callback-key-for-the-tests-32byt").decode()
HOOK_SECRET = "whsec_" + base64.b64encode(b"hook-key-for-the-tests-of-32byte").decode()
TOKENS = {"ops-token": "ops", "eve-token": "eve"}


def start_dev(data_dir: Path, work: Path, **extra: str) -> DevProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPLINE_", "AWS_"))}
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(REPO / "shared"), str(REPO)]),
            "STEPLINE_AGENT": "tests.unattended.worker_agents:AGENTS",
            "STEPLINE_DEV_TOKENS": ",".join(f"{t}:{u}" for t, u in TOKENS.items()),
            "STEPLINE_CALLBACK_SECRET": SECRET,
            "STEPLINE_CALLBACK_BACKOFF_SECONDS": "0.2",
            "STEPLINE_HOOK_SECRET_REPORTS_TICKET": HOOK_SECRET,
            **extra,
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


def auth(user: str) -> dict[str, str]:
    token = next(t for t, u in TOKENS.items() if u == user)
    return {"authorization": f"Bearer {token}"}


@dataclass
class Received:
    body: bytes
    headers: dict[str, str]


@dataclass
class Receiver:
    """An HTTP server on loopback: answers each POST with the next of `statuses` (then 200), records it.

    `hold` makes every request wait until `release` is set (a receiver that hangs).
    """

    statuses: list[int] = field(default_factory=list[int])
    received: list[Received] = field(default_factory=list[Received])
    hold: bool = False
    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    url: str = ""


@contextmanager
def receiver(statuses: list[int] | None = None, *, hold: bool = False) -> Iterator[Receiver]:
    state = Receiver(list(statuses or []), hold=hold)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            state.received.append(Received(body, {k.lower(): v for k, v in self.headers.items()}))
            if state.hold:
                state.entered.set()
                state.release.wait(30)
            status = state.statuses.pop(0) if state.statuses else 200
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            del format, args

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/stepline"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
