"""The README's first command, verbatim, in a fresh copy of the repository with a fresh virtual
environment: it installs Stepline, brings the local runtime up (the health check answers, a chat
round-trip works with the scripted demo), and stops cleanly on Ctrl-C.

It serves on a free port (`--port`, appended to the command), not on the README's 8000: a newcomer
runs the README's run command and then its test command, so 8000 is usually taken by then."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import TextIO

import httpx

from stepline.protocol.sse import decode_ui_message_stream

REPO = Path(__file__).resolve().parents[2]
INSTALL_AND_START_SECONDS = 600


def readme_run_command() -> str:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.DOTALL)
    return blocks[0].strip()


def fresh_copy(target: Path) -> None:
    """The files git tracks (and new ones not ignored): what a clean clone of this tree holds."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_readme_command_runs_stepline_locally(tmp_path: Path) -> None:
    command = readme_run_command()
    assert command.endswith("stepline dev"), "the test appends --port to the README's command"
    port = free_port()
    command += f" --port {port}"
    checkout = tmp_path / "stepline"
    fresh_copy(checkout)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPLINE_", "VIRTUAL_ENV", "AWS_"))}
    env.pop("PYTHONPATH", None)
    with (tmp_path / "run.log").open("w+") as log:
        run_and_check(command, checkout, env, log, url=f"http://127.0.0.1:{port}")


def run_and_check(command: str, checkout: Path, env: dict[str, str], log: TextIO, *, url: str) -> None:
    process = subprocess.Popen(
        ["bash", "-c", command], cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + INSTALL_AND_START_SECONDS
        with httpx.Client(base_url=url, timeout=30) as client:
            while True:
                assert process.poll() is None, f"the command exited: {_tail(log)}"
                assert time.monotonic() < deadline, f"not up after {INSTALL_AND_START_SECONDS} s: {_tail(log)}"
                try:
                    health = client.get("/api/health")
                    break
                except httpx.TransportError:
                    time.sleep(1)
            assert health.status_code == 200 and health.json()["model"].startswith("scripted:")
            body = {
                "id": "readme-chat",
                "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}],
                "trigger": "submit-message",
            }
            answer = client.post("/api/chat", json=body)
            stored = client.get("/api/conversations/readme-chat").json()
        chunks = decode_ui_message_stream(answer.text)
        assert chunks[0].type == "start" and chunks[-1].type == "finish"
        assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]
        assert "scripted demo" in str(stored["messages"][1]["parts"])
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=30) == 0, _tail(log)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    output = _tail(log, 10_000)
    assert f"Stepline is running at {url}" in output
    assert "scripted demo" in output and "STEPLINE_MODEL" in output


def _tail(log: TextIO, size: int = 3000) -> str:
    log.flush()
    log.seek(0)
    return log.read()[-size:]
