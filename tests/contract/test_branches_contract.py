"""Branches on every backend: edits and regenerations branch, a switch restores one, refusals write nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stepline.store.branches import BranchFrom, branch_points
from stepline.store.errors import ActiveRunExists, Conflict, NotFound
from stepline.store.ports import FinishRun, SnapshotUpdate, Store, TurnStart

Backend = tuple[Store, Callable[[], Any]]
USER, OTHER = "alice", "bob"


def turn(
    store: Store, run: str, *, text: str | None, after: str | None = None, branch: bool = False, now: int = 1_000
) -> None:
    """A turn that ends completed: `u-{run}` (when `text`) and `a-{run}`, on a branch from `after` when `branch`."""
    store.start_turn(
        USER,
        TurnStart(
            conversation_id="c1",
            run_id=run,
            assistant_message_id=f"a-{run}",
            user_message=None
            if text is None
            else {"id": f"u-{run}", "role": "user", "parts": [{"type": "text", "text": text}]},
            branch=BranchFrom(after=after) if branch else None,
            now=now,
        ),
    )
    store.mark_running(USER, run, now=now)
    snapshot = SnapshotUpdate(parts=[{"type": "text", "text": f"answer {run}"}], metadata=None, snapshot_seq=0)
    store.finish_run(USER, run, FinishRun(status="completed", snapshot=snapshot, now=now + 1))


def active(store: Store) -> list[str]:
    return [m.message_id for m in store.list_messages(USER, "c1").items if m.superseded_by is None]


def test_an_edit_branches_off_and_the_old_branch_is_kept_out_of_the_history(backend: Backend) -> None:
    store, _ = backend
    turn(store, "r1", text="one")
    turn(store, "r2", text="two")
    turn(store, "r3", text="two, edited", after="a-r1", branch=True)
    assert active(store) == ["u-r1", "a-r1", "u-r3", "a-r3"]
    stored = {m.message_id: m for m in store.list_messages(USER, "c1").items}
    assert (stored["u-r2"].superseded_by, stored["a-r2"].superseded_by) == ("r3", "r3"), "kept, on another branch"
    assert stored["u-r3"].parent_message_id == "a-r1" and stored["a-r3"].parent_message_id == "u-r3"
    (point,) = branch_points(list(stored.values()))
    assert (point.parent_id, point.sibling_ids, point.active_id) == ("a-r1", ["u-r2", "u-r3"], "u-r3")


def test_a_regeneration_of_an_earlier_answer_follows_its_user_message(backend: Backend) -> None:
    store, _ = backend
    turn(store, "r1", text="one")
    turn(store, "r2", text="two")
    turn(store, "r3", text=None, after="u-r1", branch=True)
    assert active(store) == ["u-r1", "a-r3"]
    points = branch_points(store.list_messages(USER, "c1").items)
    assert [(p.parent_id, p.sibling_ids) for p in points] == [("u-r1", ["a-r1", "a-r3"])]


def test_editing_the_first_message_branches_from_the_start(backend: Backend) -> None:
    store, _ = backend
    turn(store, "r1", text="one")
    turn(store, "r2", text="one, edited", after=None, branch=True)
    assert active(store) == ["u-r2", "a-r2"]
    (point,) = branch_points(store.list_messages(USER, "c1").items)
    assert (point.parent_id, point.sibling_ids) == (None, ["u-r1", "u-r2"])


def test_a_switch_restores_the_whole_branch_as_it_was_and_a_new_message_follows_it(backend: Backend) -> None:
    store, _ = backend
    turn(store, "r1", text="one")
    turn(store, "r2", text="two")
    turn(store, "r3", text="three")
    turn(store, "r4", text="two, edited", after="a-r1", branch=True)
    store.switch_branch(USER, "c1", "u-r2", now=5_000)
    assert active(store) == ["u-r1", "a-r1", "u-r2", "a-r2", "u-r3", "a-r3"], "the old branch down to its leaf"
    turn(store, "r5", text="four", now=6_000)
    assert active(store)[-2:] == ["u-r5", "a-r5"]
    assert store.get_message(USER, "c1", "u-r5").parent_message_id == "a-r3"
    store.switch_branch(USER, "c1", "a-r4", now=7_000)
    assert active(store) == ["u-r1", "a-r1", "u-r4", "a-r4"]
    store.switch_branch(USER, "c1", "u-r2", now=8_000)
    assert active(store)[-2:] == ["u-r5", "a-r5"], "the branch as it was last seen, with its newest turn"


def test_a_switch_is_refused_while_a_run_is_active_and_for_what_is_not_the_users(backend: Backend) -> None:
    store, dump = backend
    turn(store, "r1", text="one")
    turn(store, "r2", text="one, edited", after=None, branch=True)
    store.start_turn(
        USER,
        TurnStart(conversation_id="c1", run_id="r3", assistant_message_id="a-r3", user_message=None, now=3_000),
    )
    before = dump()
    with pytest.raises(ActiveRunExists):
        store.switch_branch(USER, "c1", "u-r1", now=4_000)
    with pytest.raises(NotFound):
        store.switch_branch(OTHER, "c1", "u-r1", now=4_000)
    assert dump() == before
    store.finish_run(
        USER,
        "r3",
        FinishRun(status="aborted", snapshot=SnapshotUpdate(parts=[], metadata=None, snapshot_seq=0), now=4_500),
    )
    before = dump()
    with pytest.raises(NotFound):
        store.switch_branch(USER, "c1", "nope", now=5_000)
    assert dump() == before


def test_a_branch_from_a_message_off_the_active_branch_is_refused_and_writes_nothing(backend: Backend) -> None:
    store, dump = backend
    turn(store, "r1", text="one")
    turn(store, "r2", text="two")
    turn(store, "r3", text="two, edited", after="a-r1", branch=True)
    before = dump()
    with pytest.raises(Conflict):  # a-r2 left the active branch: an edit racing the one that moved it
        turn(store, "r4", text="three", after="a-r2", branch=True)
    assert dump() == before


def test_two_edits_racing_on_one_message_one_branch_wins(backend: Backend) -> None:
    store, dump = backend
    turn(store, "r1", text="one")
    turn(store, "r2", text="two")
    first = TurnStart(
        conversation_id="c1",
        run_id="r3",
        assistant_message_id="a-r3",
        user_message={"id": "u-r3", "role": "user", "parts": [{"type": "text", "text": "A"}]},
        branch=BranchFrom(after="a-r1"),
        now=3_000,
    )
    store.start_turn(USER, first)
    before = dump()
    second = TurnStart(
        conversation_id="c1",
        run_id="r4",
        assistant_message_id="a-r4",
        user_message={"id": "u-r4", "role": "user", "parts": [{"type": "text", "text": "B"}]},
        branch=BranchFrom(after="a-r1"),
        now=3_001,
    )
    with pytest.raises(ActiveRunExists):
        store.start_turn(USER, second)
    assert dump() == before
    assert active(store) == ["u-r1", "a-r1", "u-r3", "a-r3"]
