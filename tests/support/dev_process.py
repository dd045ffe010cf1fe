"""`stepline dev` as a user runs it: the console script in a process of its own, up once it answers
/api/health, stopped with Ctrl-C (SIGINT to its process group) and expected to exit cleanly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

START_SECONDS = 120  # a deadline for the server to answer, not a measured duration


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def dev_process(command: list[str], *, cwd: Path, env: Mapping[str, str], log: Path, port: int) -> Iterator[str]:
    """Run `command` (a `stepline dev ... --port port`); yields its URL once it answers."""
    with log.open("w") as out:
        process = subprocess.Popen(
            command, cwd=cwd, env=dict(env), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            try:
                httpx.get(url + "/api/health", timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.3)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0, log.read_text()
