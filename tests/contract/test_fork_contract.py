"""Forks on every backend: a seeded turn writes its branch, log, checkpoint and decided wait at once, or nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stepline.store.branches import BranchFrom
from stepline.store.errors import ActiveRunExists, Conflict
from stepline.store.ports import FinishRun, SnapshotUpdate, Store, TurnStart
from stepline.store.records import ApprovalRecord, NewEvent
from stepline.store.seed import RunSeed

Backend = tuple[Store, Callable[[], Any]]
USER = "alice"


def source(store: Store, run: str = "r1", *, finish: bool = True) -> None:
    store.start_turn(
        USER,
        TurnStart(
            conversation_id="c1",
            run_id=run,
            assistant_message_id=f"a-{run}",
            user_message={"id": f"u-{run}", "role": "user", "parts": [{"type": "text", "text": "one"}]},
            now=1_000,
        ),
    )
    store.mark_running(USER, run, now=1_000)
    for steps in (0, 1, 2):
        store.save_checkpoint(USER, run, state={"steps": [{}] * steps}, reason="step_end", now=1_000 + steps)
    if finish:
        snapshot = SnapshotUpdate(parts=[{"type": "text", "text": "answer"}], metadata=None, snapshot_seq=0)
        store.finish_run(USER, run, FinishRun(status="completed", snapshot=snapshot, now=2_000))


def seed(source_run: str = "r1", approval_run: str = "f1") -> RunSeed:
    approval = ApprovalRecord(
        user_id=USER,
        approval_id="aitxt-f1",
        run_id=approval_run,
        tool_call_id="call-1",
        tool_name="send",
        status="approved",
        decision="approved",
        requested_at=3_000,
    )
    return RunSeed(
        source_run_id=source_run,
        step_index=2,
        checkpoint_state={"steps": [{}, {}], "forked": True},
        events=[
            NewEvent(type="start", chunks=[{"type": "start", "messageId": "a-f1"}]),
            NewEvent(type="replay", chunks=[{"type": "start-step"}, {"type": "finish-step"}]),
        ],
        parts=[{"type": "step-start"}],
        approvals=[approval],
    )


def fork(store: Store, the_seed: RunSeed) -> None:
    store.start_turn(
        USER,
        TurnStart(
            conversation_id="c1",
            run_id="f1",
            assistant_message_id="a-f1",
            user_message=None,
            branch=BranchFrom(after="u-r1"),
            seed=the_seed,
            now=3_000,
        ),
    )


def test_a_fork_is_written_whole_beside_its_source(backend: Backend) -> None:
    store, _ = backend
    source(store)
    found = store.checkpoint_for_step(USER, "r1", 1)
    assert found is not None and len(found.state["steps"]) == 1
    assert store.checkpoint_for_step(USER, "r1", 7) is None
    fork(store, seed())
    checkpoint = store.latest_checkpoint(USER, "f1")
    assert checkpoint is not None and checkpoint.state["forked"] is True and checkpoint.last_event_seq == 2
    assert [e.seq for e in store.events_after(USER, "f1", 0, now=3_000)] == [1, 2]
    message = store.get_message(USER, "c1", "a-f1")
    assert message.parts == [{"type": "step-start"}] and message.snapshot_seq == 2
    assert message.parent_message_id == "u-r1"
    assert store.get_message(USER, "c1", "a-r1").superseded_by == "f1", "the old answer: on another branch"
    assert store.get_approval(USER, "aitxt-f1").status == "approved"
    assert store.get_run(USER, "r1").status == "completed" and store.get_run(USER, "f1").last_event_seq == 2


def test_a_fork_of_a_run_still_working_or_with_a_foreign_approval_writes_nothing(backend: Backend) -> None:
    store, dump = backend
    source(store, finish=False)
    before = dump()
    with pytest.raises(ActiveRunExists):
        fork(store, seed())
    assert dump() == before
    store.finish_run(
        USER,
        "r1",
        FinishRun(status="completed", snapshot=SnapshotUpdate(parts=[], metadata=None, snapshot_seq=0), now=2_000),
    )
    before = dump()
    with pytest.raises(Conflict):
        fork(store, seed(approval_run="r1"))
    with pytest.raises(Conflict):
        fork(store, seed(source_run="nope"))
    assert dump() == before, "a refused fork wrote nothing"
