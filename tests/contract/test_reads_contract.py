"""The reads every backend shares (`stepline.store.unit_reads`), on every backend.

Reads by key and a run's tool calls are written once over the unit of work; what they promise is
checked here on memory, SQLite and DynamoDB alike: scoped to the user, the latest checkpoint is the
last one written, and a record read is the caller's to keep (changing it changes nothing stored).
"""

from __future__ import annotations

import pytest

from stepline.store.errors import InvalidCursor, NotFound
from stepline.store.records import ArtifactRecord
from stepline.store.unit_reads import offset_cursor
from tests.contract.test_store_contract import USER, Backend, request_one_approval, save_step, start, tool_call


def _artifact() -> ArtifactRecord:
    return ArtifactRecord(
        user_id=USER,
        artifact_id="art1",
        conversation_id="c1",
        message_id="a-r1",
        run_id="r1",
        name="report.pdf",
        storage_key="users/alice/x",
        created_at=1,
    )


def test_every_read_by_key_is_scoped_to_the_user(backend: Backend) -> None:
    store, _ = backend
    start(store)
    request_one_approval(store)
    store.put_artifact(_artifact())
    for read in (
        lambda: store.get_conversation("bob", "c1"),
        lambda: store.get_run("bob", "r1"),
        lambda: store.get_approval("bob", "ap1"),
        lambda: store.get_artifact("bob", "art1"),
        lambda: store.latest_checkpoint("bob", "r1"),
        lambda: store.list_tool_calls("bob", "r1"),
    ):
        with pytest.raises(NotFound):
            read()
    assert (store.get_approval(USER, "ap1").run_id, store.get_artifact(USER, "art1").name) == ("r1", "report.pdf")


def test_the_latest_checkpoint_is_the_last_one_written(backend: Backend) -> None:
    store, _ = backend
    start(store)
    assert store.latest_checkpoint(USER, "r1") is None
    for n in range(1, 4):
        store.save_checkpoint(USER, "r1", state={"n": n}, reason="step_end", now=1_000 + n)
    latest = store.latest_checkpoint(USER, "r1")
    assert latest is not None and (latest.seq, latest.state) == (3, {"n": 3})


def test_a_run_s_tool_calls_come_by_step_then_id(backend: Backend) -> None:
    store, _ = backend
    start(store)
    request_one_approval(store, call_id="b")
    assert [c.tool_call_id for c in store.list_tool_calls(USER, "r1")] == ["b"]
    with pytest.raises(NotFound):
        store.list_tool_calls(USER, "no-such-run")


def test_a_record_read_is_the_callers_to_change(backend: Backend) -> None:
    store, _ = backend
    start(store)
    request_one_approval(store)
    store.get_run(USER, "r1").error = {"changed": True}
    store.get_approval(USER, "ap1").input["p"] = "/changed"
    store.list_tool_calls(USER, "r1")[0].input["city"] = "changed"
    assert store.get_run(USER, "r1").error is None
    assert store.get_approval(USER, "ap1").input == {"p": "/x"}
    assert store.list_tool_calls(USER, "r1")[0].input == tool_call("c1").input


def test_an_offset_cursor_is_a_short_run_of_digits() -> None:
    assert (offset_cursor(None), offset_cursor(""), offset_cursor("40")) == (0, 0, 40)
    for forged in ("-1", "1e3", "٣", "1234567890", "abc"):
        with pytest.raises(InvalidCursor):
            offset_cursor(forged)


def test_a_run_s_steps_read_from_a_step_on_in_step_order(backend: Backend) -> None:
    store, _ = backend
    start(store)
    for index in range(12):  # 10 and 11 sort after 9 only as numbers
        save_step(store, index, calls=[tool_call(f"c{index}")])
    assert [s.step_index for s in store.list_steps(USER, "r1")] == list(range(12))
    assert [s.step_index for s in store.list_steps(USER, "r1", from_step=8)] == [8, 9, 10, 11]
    assert store.list_steps(USER, "r1", from_step=12) == []
    with pytest.raises(NotFound):
        store.list_steps("bob", "r1", from_step=8)
