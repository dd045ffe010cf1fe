"""An interrupt is one write on every backend: the message queued first and the run marked to stop, or neither."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stepline.store.errors import ActiveRunExists, Conflict, NotFound
from stepline.store.ports import Store, TurnStart
from stepline.store.records import InboxEntry

Backend = tuple[Store, Callable[[], Any]]
USER, OTHER = "alice", "bob"
REASON = "new_user_message"


def start(store: Store, run: str, message: str) -> None:
    store.start_turn(
        USER,
        TurnStart(
            conversation_id="c1",
            run_id=run,
            assistant_message_id=f"a-{run}",
            user_message={"id": message, "role": "user", "parts": [{"type": "text", "text": message}]},
            now=1_000,
        ),
    )
    store.mark_running(USER, run, now=1_001)


def entry(message_id: str) -> InboxEntry:
    return InboxEntry(
        message_id=message_id,
        mode="queue",
        message={"id": message_id, "role": "user", "parts": [{"type": "text", "text": "instead"}]},
        run_id=f"run-for-{message_id}",
        assistant_message_id=f"a-for-{message_id}",
        queued_at=1_002,
    )


def test_an_interrupt_queues_the_message_first_and_marks_the_run_in_one_write(backend: Backend) -> None:
    store, _ = backend
    start(store, "r1", "u1")
    store.enqueue_message(USER, "c1", entry("q1"), now=1_002)
    assert store.get_run(USER, "r1").cancel_reason is None, "a plain queue does not stop the run"
    store.enqueue_message(USER, "c1", entry("u2"), now=1_003, interrupt=("r1", REASON))
    assert [e.message_id for e in store.get_conversation(USER, "c1").inbox] == ["u2", "q1"]
    assert store.get_run(USER, "r1").cancel_reason == REASON
    again = store.enqueue_message(USER, "c1", entry("u2"), now=1_004, interrupt=("r1", REASON))
    assert again.message_id == "u2" and len(store.get_conversation(USER, "c1").inbox) == 2, "a repeat is the same"


@pytest.mark.parametrize(
    ("message_id", "run_id", "user", "error"),
    [
        ("u1", "r1", USER, Conflict),  # the message id is taken: no message queued, so no stop
        ("u2", "r-gone", USER, ActiveRunExists),  # another run is active now: it is not stopped for this
        ("u2", "r1", OTHER, NotFound),  # another user's conversation
    ],
)
def test_a_refused_interrupt_writes_nothing_neither_the_message_nor_the_stop(
    backend: Backend, message_id: str, run_id: str, user: str, error: type[Exception]
) -> None:
    store, dump = backend
    start(store, "r1", "u1")
    before = dump()
    with pytest.raises(error):
        store.enqueue_message(user, "c1", entry(message_id), now=1_002, interrupt=(run_id, REASON))
    assert dump() == before
    assert store.get_run(USER, "r1").cancel_reason is None and not store.get_conversation(USER, "c1").inbox
