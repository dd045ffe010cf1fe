"""`stepline dev --reload` over a data folder: an edit of the agent restarts the server, the data folder
changes hands between the two servers (the first releases its lock before the second takes it), and a
run that was waiting for an approval when the server restarted is decided and finishes on the new one."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepline.project.scaffold import init_project
from tests.support.dev_process import dev_process, free_port

REPO = Path(__file__).resolve().parents[2]
STEPLINE = Path(sys.executable).with_name("stepline")
WAIT_SECONDS = 120  # a deadline for a condition, never a measured duration


def until(condition: Any, what: str, log: Path) -> Any:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            found = condition()
        except httpx.TransportError:
            found = None
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"{what} did not happen; log:\n{log.read_text()}")


@pytest.fixture
def reloading(tmp_path: Path) -> Iterator[tuple[str, Path, Path]]:
    project = tmp_path / "notes"
    init_project(project)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPLINE_", "AWS_", "OPENAI_", "ANTHROPIC_"))}
    env |= {"PYTHONPATH": os.pathsep.join([str(REPO / "shared"), "src"]), "STEPLINE_WEB_DIST": str(tmp_path / "ui")}
    port, log = free_port(), tmp_path / "dev.log"
    command = [str(STEPLINE), "dev", "--reload", "--port", str(port), "--agent", "agent:agent"]
    with dev_process(command, cwd=project, env=env, log=log, port=port) as url:
        yield url, project, log


def note_part(client: httpx.Client, conversation: str) -> dict[str, Any] | None:
    stored = client.get(f"/api/conversations/{conversation}")
    if stored.status_code != 200 or len(stored.json()["messages"]) < 2:
        return None
    parts = stored.json()["messages"][1]["parts"]
    return next((p for p in parts if p["type"] == "tool-save_note"), None)


def description(client: httpx.Client) -> str:
    return str(client.get("/api/agents").json()["agents"][0]["description"])


def test_an_edit_restarts_the_server_and_the_waiting_run_goes_on(reloading: tuple[str, Path, Path]) -> None:
    url, project, log = reloading
    body = {
        "id": "reload-chat",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "save a note: milk"}]}],
        "trigger": "submit-message",
    }
    with httpx.Client(base_url=url, timeout=30) as client:
        with client.stream("POST", "/api/chat", json=body) as stream:  # stays open while the run waits
            for line in stream.iter_lines():
                if "tool-approval-request" in line:
                    break
        waiting = until(lambda: note_part(client, "reload-chat"), "the approval request", log)
        assert waiting["state"] == "approval-requested"
        before = description(client)
        agent = project / "src" / "agent.py"
        agent.write_text(agent.read_text().replace(before, "Saves notes, reloaded."))
        until(lambda: description(client) == "Saves notes, reloaded.", "the reload", log)
        decided = client.post(f"/api/approvals/{waiting['approval']['id']}", json={"approved": True})
        assert decided.status_code == 200, decided.text
        done = until(
            lambda: (p := note_part(client, "reload-chat")) and p["state"] == "output-available" and p,
            "the approved note",
            log,
        )
    assert done["output"] == {"saved": "notes/note.md"}
    text = log.read_text()
    assert text.count("Stepline is running at") == 2, text  # one restart, for one edit
    assert "agent.py changed; restarting the server" in text
    assert "1 unfinished run driven again" in text  # the new server drove the waiting run
    assert "in use by another stepline dev" not in text and "Traceback" not in text
