"""Messages written before branches existed (no `parent_recorded`, user messages and regenerated answers
without a parent) read as one chain, and a new write records its parent. Pure logic over records parsed
from the old item shape; the write side on every backend."""

from __future__ import annotations

from typing import Any

from stepline.store.branches import branch_points, parents
from stepline.store.records import MessageRecord
from tests.contract.test_branches_contract import USER, Backend, turn


def old(message_id: str, seq: int, role: str, parent: str | None = None, **fields: Any) -> MessageRecord:
    """A message as the store wrote it before branches: no `parent_recorded` field."""
    raw = {"user_id": USER, "conversation_id": "c1", "message_id": message_id, "seq": seq, "role": role}
    return MessageRecord.model_validate({**raw, "parent_message_id": parent, "created_at": 1, **fields})


def test_an_old_chat_with_a_regenerated_answer_reads_as_one_chain() -> None:
    messages = [
        old("u1", 1, "user"),
        old("a1", 2, "assistant", "u1", run_id="r1", superseded_by="r2"),  # regenerated, the old way
        old("a2", 3, "assistant", None, run_id="r2"),
        old("u2", 4, "user"),
        old("a3", 5, "assistant", "u2", run_id="r3"),
    ]
    assert parents(messages) == {"u1": None, "a1": "u1", "a2": "u1", "u2": "a2", "a3": "u2"}
    (point,) = branch_points(messages)
    assert point.parent_id == "u1" and point.sibling_ids == ["a1", "a2"] and point.active_id == "a2"


def test_an_old_message_left_by_a_later_edit_keeps_the_parent_it_had() -> None:
    messages = [
        old("u1", 1, "user", superseded_by="r9"),
        old("a1", 2, "assistant", "u1", run_id="r1", superseded_by="r9"),
        old("u2", 3, "user", superseded_by="r9"),
        MessageRecord(
            user_id=USER, conversation_id="c1", message_id="u9", seq=4, role="user", created_at=2, parent_recorded=True
        ),
        MessageRecord(
            user_id=USER,
            conversation_id="c1",
            message_id="a9",
            seq=5,
            role="assistant",
            run_id="r9",
            parent_message_id="u9",
            created_at=2,
            parent_recorded=True,
        ),
    ]
    assert parents(messages) == {"u1": None, "a1": "u1", "u2": "a1", "u9": None, "a9": "u9"}, "u2 still follows a1"


def test_new_writes_record_their_parent_on_every_backend(backend: Backend) -> None:
    store, _ = backend
    turn(store, "r1", text="one")
    turn(store, "r2", text="one, edited", branch=True)  # a root edit: its parent None, recorded as such
    stored = {m.message_id: m for m in store.list_messages(USER, "c1").items}
    assert all(m.parent_recorded for m in stored.values())
    assert parents(list(stored.values()))["u-r2"] is None, "a recorded root stays the root"
