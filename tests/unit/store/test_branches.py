"""The branch rules on plain records (`stepline.store.branches`): what an id means, what a branch takes off."""

from __future__ import annotations

import pytest

from stepline.store.branches import active_sibling, branch_points, leaving, switch
from stepline.store.records import MessageRecord


def message(seq: int, message_id: str, parent: str | None, off: str | None = None) -> MessageRecord:
    role = "user" if message_id.startswith("u") else "assistant"
    return MessageRecord(
        user_id="alice",
        conversation_id="c",
        message_id=message_id,
        seq=seq,
        role=role,
        parent_message_id=parent,
        created_at=seq,
        superseded_by=off,
    )


# u1 a1 (u2 a2, off by edit r3) (u3 a3 active): u3 is the edit of u2
TREE = [
    message(1, "u1", None),
    message(2, "a1", "u1"),
    message(3, "u2", "a1", off="r3"),
    message(4, "a2", "u2", off="r3"),
    message(5, "u3", "a1"),
    message(6, "a3", "u3"),
]


def test_an_id_off_the_active_branch_means_its_alternative_on_it() -> None:
    assert active_sibling(TREE, "u2") == TREE[4], "the client's id of the message it edited"
    assert active_sibling(TREE, "u1") == TREE[0]
    assert active_sibling(TREE, "nope") is None
    assert active_sibling(TREE, "a2") is None, "its branch is not shown: nothing on the active branch stands for it"


def test_a_branch_takes_off_what_follows_its_point_on_the_active_branch() -> None:
    assert [m.message_id for m in leaving(TREE, "a1")] == ["u3", "a3"]
    assert [m.message_id for m in leaving(TREE, None)] == ["u1", "a1", "u3", "a3"]
    assert leaving(TREE, "a3") == []
    with pytest.raises(ValueError, match="not on the conversation's active branch"):
        leaving(TREE, "u2")


def test_a_switch_marks_only_what_changes() -> None:
    assert switch(TREE, "u2", "s1") == {"u2": None, "a2": None, "u3": "s1", "a3": "s1"}
    assert switch(TREE, "a3", "s1") == {}, "already shown"
    (point,) = branch_points(TREE)
    assert (point.parent_id, point.sibling_ids, point.active_id) == ("a1", ["u2", "u3"], "u3")
