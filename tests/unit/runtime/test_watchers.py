"""Who follows a run sets its delta window: a chat's run nobody follows writes at the unattended one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import stepline.api.tail as tail
from stepline.api.tail import follow_run
from stepline.protocol.chunks import parse_chunk
from stepline.runtime.services import Services
from stepline.runtime.watchers import NOTE_TTL_SECONDS, MemoryWatchers, delta_window_of, noter, window_of
from stepline.store.event_batcher import DEFAULT_WINDOW, UNATTENDED_WINDOW, EventBatcher
from stepline.store.memory import MemoryStore
from stepline.store.records import RunRecord
from tests.unit.api.test_tail import RUN, USER, finish, read, store_with_events

CHAT, ALONE = 0.05, 1.0
NOW = 1_000_000

TOP = RunRecord(
    user_id=USER,
    run_id=RUN,
    conversation_id="c",
    request_message_id="m",
    assistant_message_id="a",
    assistant_message_seq=2,
    started_at=0,
)
CHILD = TOP.model_copy(update={"context": {"parent": {"runId": "lead", "toolCallId": "t1"}}})
HEADLESS = TOP.model_copy(update={"trigger": "automation"})


@pytest.mark.parametrize(
    ("run", "until", "window"),
    [
        (TOP, None, CHAT),  # its chat's stream may not have noted itself yet
        (TOP, NOW + 1, CHAT),  # followed
        (TOP, NOW, ALONE),  # its last note has just expired
        (CHILD, None, ALONE),  # a sub-agent's deltas reach no stream unless someone opens it
        (CHILD, NOW + 1, CHAT),  # someone opened it
        (HEADLESS, NOW + 1, ALONE),  # no chat started it: its window whoever follows
        (HEADLESS, None, ALONE),
    ],
)
def test_the_window_by_who_follows_the_run(run: RunRecord, until: int | None, window: float) -> None:
    assert window_of(run, until, now_ms=NOW, chat_window=CHAT, unattended_window=ALONE) == window


def _services(**options: Any) -> Services:
    return Services(model=None, tools=[], store=MemoryStore(), clock=lambda: NOW, **options)  # type: ignore[arg-type]


def test_without_watchers_only_the_trigger_counts() -> None:
    services = _services()
    assert [delta_window_of(services, r) for r in (TOP, CHILD, HEADLESS)] == [
        DEFAULT_WINDOW,
        DEFAULT_WINDOW,
        UNATTENDED_WINDOW,
    ]
    assert noter(services, USER, RUN) is None


def test_a_stream_note_counts_for_its_ttl_and_the_latest_counts_longest() -> None:
    watchers = MemoryWatchers()
    services = _services(watchers=watchers)
    assert watchers.watched_until(USER, RUN) is None
    assert delta_window_of(services, CHILD) == UNATTENDED_WINDOW
    note = noter(services, USER, RUN)
    assert note is not None
    note()
    assert watchers.watched_until(USER, RUN) == NOW + NOTE_TTL_SECONDS * 1000
    assert delta_window_of(services, CHILD) == DEFAULT_WINDOW
    watchers.note(USER, RUN, until_ms=NOW)  # an older note (another stream's) shortens nothing
    assert watchers.watched_until(USER, RUN) == NOW + NOTE_TTL_SECONDS * 1000
    assert watchers.watched_until("someone-else", RUN) is None  # per user


class _Unreadable(MemoryWatchers):
    def watched_until(self, user_id: str, run_id: str) -> int | None:
        raise RuntimeError("throttled")


def test_a_note_that_cannot_be_read_counts_as_none() -> None:
    services = _services(watchers=_Unreadable())
    assert [delta_window_of(services, r) for r in (TOP, CHILD)] == [DEFAULT_WINDOW, UNATTENDED_WINDOW]


def test_a_stream_notes_itself_when_it_starts_and_a_failing_note_does_not_end_it() -> None:
    store = store_with_events([[{"type": "start"}], [{"type": "text-start", "id": "t"}]])
    finish(store)
    notes: list[int] = []

    def note() -> None:
        notes.append(1)
        raise RuntimeError("throttled")

    frames = read(store, note=note)
    assert notes == [1]
    assert frames[-1] == (None, "[DONE]")  # the whole run was sent all the same


def test_a_stream_renews_its_note_while_it_follows(monkeypatch: Any) -> None:
    monkeypatch.setattr(tail, "NOTE_SECONDS", 0.02)
    store = store_with_events([[{"type": "start"}]])
    notes: list[int] = []

    async def follow() -> None:
        async def end_later() -> None:
            await asyncio.sleep(0.3)
            finish(store)

        ender = asyncio.create_task(end_later())
        async for _ in follow_run(store, USER, RUN, clock=lambda: 2, note=lambda: notes.append(1)):
            pass
        await ender

    asyncio.run(follow())
    assert len(notes) >= 2  # at the start, and again while it waited for more


def test_the_batcher_takes_a_new_window_for_what_it_holds() -> None:
    now = [0.0]
    batcher = EventBatcher(window=1.0, clock=lambda: now[0])
    delta = {"type": "text-delta", "id": "t"}
    assert batcher.add(parse_chunk({**delta, "delta": "a"}))  # the leading edge, written at once
    now[0] = 0.1
    assert batcher.add(parse_chunk({**delta, "delta": "b"})) == []  # held for the 1 s window
    assert batcher.next_deadline() == 1.0  # a window after the last write (the leading edge, at 0)
    batcher.window = 0.05  # a watcher came: what is held is due by the chat's window
    assert batcher.next_deadline() == 0.05
    assert [e.chunks for e in batcher.poll()] == [[{**delta, "delta": "b"}]]
    with pytest.raises(ValueError, match="0 or more"):
        batcher.window = -1
