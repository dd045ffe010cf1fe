"""Edit-and-branch, regenerate and branch switching survive a kill -9 of `stepline dev`.

The new branch's run is killed mid-stream (its tool step saved, its slow text step streaming) or, for
an edit, mid-tool too (its tool running); after the restart on the same data folder it ends once, with
the whole answer, its tool started once across the kill (a cut one reported, not run again); the old
branch is kept beside it and out of the active history; switching back and forth works after the
restart, and a switch survives a kill between the switch and the next read. The tab the kill cut
resumes with `Last-Event-ID` and its stream makes the stored message. Checked from outside: HTTP,
and the tool journal for side effects.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.test_branches_api import answer, post
from tests.restart.chat import conversation, run_status, switch, text_of, user
from tests.restart.process import (
    DevProcess,
    Follower,
    assert_resumed_whole,
    journal_lines,
    poll,
    resume,
    serving,
    write_book,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]  # two or three starts of a real server each

FULL_SLOW_TEXT = "".join(f"word{i} " for i in range(30))
STREAMING = httpx.Timeout(30, read=None)
History = list[dict[str, Any]]


def turns(client: httpx.Client, chat: str, texts: tuple[str, ...]) -> History:
    """u1 a1 u2 a2 …, each answered to the end."""
    history: History = []
    for n, text in enumerate(texts, start=1):
        history.append(user(text, f"u{n}"))
        history.append(answer(post(client, chat, history)))
    return history


def settled(client: httpx.Client, chat: str, length: int) -> dict[str, Any] | None:
    found = conversation(client, chat)
    done = found["activeRunId"] is None and not found["waiting"] and len(found["messages"]) == length
    return found if done and all(m["status"] == "completed" for m in found["messages"]) else None


@dataclass(frozen=True)
class Kill:
    """Where the new branch's run is killed: `text` (the branch's user message) makes the scripted model
    call `tool`, then answer `answer`; the kill lands once `tool` started and some text streamed."""

    text: str
    tool: str
    answer: str
    tool_state: str


MID_STREAM = Kill("work slowly", "list_files", FULL_SLOW_TEXT, "output-available")
"""`list_files` ended and its step is saved; the slow text step streams."""
MID_TOOL = Kill("run the gated step", "gated_step", "Starting the gated step.The gated step is done.", "output-error")
"""`gated_step` is running (its gate never opens): cut by the kill, reported, never run again."""


def kill_when(dev: DevProcess, follower: Follower, started: Callable[[], bool]) -> None:
    """kill -9 once the new branch's tool `started()` and some of its text streamed."""
    try:
        poll(started, "the new branch's tool starts")
        follower.wait_for('"text-delta"')
        dev.stop(signal.SIGKILL)
    finally:
        if dev.process.poll() is None:
            dev.process.kill()
    assert follower.ended.wait(10)
    assert follower.frames[-1][1] != "[DONE]", "the kill landed before the run ended"


def assert_nothing_working(client: httpx.Client, chat: str, *message_ids: str) -> None:
    """Every run that answered on either branch has ended (the ids: a message on each branch)."""
    runs = set[str]()
    for message_id in message_ids:
        runs |= {m["runId"] for m in switch(client, chat, message_id)["messages"] if m["role"] == "assistant"}
    assert {run_id: run_status(client, run_id) for run_id in runs} == dict.fromkeys(runs, "completed")


def dev(tmp_path: Path) -> AbstractContextManager[DevProcess]:
    """`stepline dev` on the test's data folder, tool journal and script book (written by the first start)."""
    book = tmp_path / "book.json"
    model = f"scripted:{book}" if book.exists() else write_book(book)
    tools = {"STEPLINE_TOOLS": "tests.restart.control_tools"}
    return serving(tmp_path / "data", tmp_path, journal=tmp_path / "tools.journal", model=model, extra_env=tools)


def branch_killed(
    tmp_path: Path,
    chat: str,
    texts: tuple[str, ...],
    trigger: str,
    branching: Callable[[History], tuple[History, str]],
    kill: Kill,
) -> tuple[History, Follower]:
    """Answer `texts`; send `trigger` with the messages and the `messageId` that `branching(history)` gives,
    as `sendMessage({ text, messageId })` and `regenerate({ messageId })` do; kill -9 at `kill`.
    Returns the history as the client holds it and the tab that followed the new branch until the kill."""
    with dev(tmp_path) as first, first.client(timeout=STREAMING) as client:
        history = turns(client, chat, texts)
        messages, message_id = branching(history)
        sent = {"id": chat, "messages": messages, "trigger": trigger, "messageId": message_id}
        journal, line = tmp_path / "tools.journal", f"{chat} {kill.tool}"
        ran = journal_lines(journal).count(line)
        following = Follower().follow(client, "POST", "/api/chat", json=sent)
        kill_when(first, following, lambda: journal_lines(journal).count(line) > ran)
    return history, following


@pytest.mark.parametrize("kill", [MID_STREAM, MID_TOOL], ids=["mid-stream", "mid-tool"])
def test_an_edit_that_branches_survives_a_kill_9_and_its_switches_too(tmp_path: Path, kill: Kill) -> None:
    journal, chat = tmp_path / "tools.journal", "kill-edit"
    history, cut = branch_killed(
        tmp_path,
        chat,
        ("alpha zebra", "bravo yak", "charlie xenon"),
        "submit-message",
        lambda history: ([*history[:2], user(kill.text, "u2")], "u2"),
        kill,
    )
    with dev(tmp_path) as second, second.client(timeout=STREAMING) as client:
        resumed = resume(client, chat, cut)
        edited = poll(lambda: settled(client, chat, 4), "the edit's run ends", timeout=90)
        assert_resumed_whole(cut, resumed, edited["messages"][3])
        assert journal_lines(journal) == [f"{chat} {kill.tool}"], "the tool started once across the kill"
        ids = [m["id"] for m in edited["messages"]]
        assert ids[:2] == ["u1", history[1]["id"]] and ids[2] != "u2", "the edit is a new message beside u2"
        assert text_of(edited["messages"][2]) == kill.text
        assert text_of(edited["messages"][3]) == kill.answer, "the cut step redone once, not its text twice"
        (tool,) = [p for p in edited["messages"][3]["parts"] if p["type"] == f"tool-{kill.tool}"]
        assert tool["state"] == kill.tool_state, "the tool's part is closed, not left running"
        (point,) = edited["branches"]
        assert point == {"parentId": history[1]["id"], "siblingIds": ["u2", ids[2]], "activeId": ids[2]}
        old = switch(client, chat, "u2")
        assert [m["id"] for m in old["messages"]] == [m["id"] for m in history], "the old branch is kept whole"
        assert old["branches"][0]["activeId"] == "u2"
        assert switch(client, chat, ids[2])["messages"] == edited["messages"]
        assert_nothing_working(client, chat, "u2", ids[2])
        assert conversation(client, chat)["messages"] == edited["messages"]
        switched = switch(client, chat, "u2")
        second.stop(signal.SIGKILL)  # between the switch and the next read

    with dev(tmp_path) as third, third.client() as client:
        assert conversation(client, chat) == switched, "the switch was durable before it was answered"
        assert switch(client, chat, ids[2])["messages"] == edited["messages"]
    assert journal_lines(journal) == [f"{chat} {kill.tool}"], "no tool ran twice, none on the old branch"


def test_a_regeneration_of_an_earlier_answer_survives_a_kill_9_mid_stream(tmp_path: Path) -> None:
    journal, chat = tmp_path / "tools.journal", "kill-regenerate"
    history, cut = branch_killed(
        tmp_path,
        chat,
        ("alpha zebra", "work slowly", "charlie xenon"),
        "regenerate-message",
        lambda history: (history[:3], history[3]["id"]),
        MID_STREAM,
    )
    with dev(tmp_path) as second, second.client(timeout=STREAMING) as client:
        resumed = resume(client, chat, cut)
        shown = poll(lambda: settled(client, chat, 4), "the regeneration's run ends", timeout=90)
        assert_resumed_whole(cut, resumed, shown["messages"][3])
        ids = [m["id"] for m in shown["messages"]]
        assert ids[:3] == ["u1", history[1]["id"], "u2"] and ids[3] != history[3]["id"]
        assert text_of(shown["messages"][3]) == FULL_SLOW_TEXT, "the cut step redone once, not its text twice"
        assert shown["branches"] == [{"parentId": "u2", "siblingIds": [history[3]["id"], ids[3]], "activeId": ids[3]}]
        old = switch(client, chat, history[3]["id"])
        assert [m["id"] for m in old["messages"]] == [m["id"] for m in history], "u3 and a3 stay on the old branch"
        assert_nothing_working(client, chat, history[3]["id"], ids[3])
        assert conversation(client, chat)["messages"] == shown["messages"]
    runs = journal_lines(journal)
    assert runs == [f"{chat} list_files"] * 2, "once for the first answer, once for the regenerated one"
