"""The store's contract: spec 000's transaction boundaries and invariants, on every backend."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from stepline.store.branches import BranchFrom
from stepline.store.errors import (
    ActiveRunExists,
    ConcurrentUpdate,
    Conflict,
    DecisionConflict,
    Gone,
    InvalidCursor,
    NotFound,
    TerminalState,
)
from stepline.store.ports import FinishRun, SnapshotUpdate, Store, TurnStart
from stepline.store.records import ApprovalRecord, ArtifactRecord, NewEvent, StepRecordRow, ToolCallRecord

Backend = tuple[Store, Callable[[], Any]]
USER, OTHER = "alice", "bob"


def user_message(message_id: str, text: str = "hello") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def start(
    store: Store,
    *,
    conversation: str = "c1",
    run: str = "r1",
    user: str = USER,
    now: int = 1_000,
    message: str | None = None,
) -> Any:
    """Start a turn and mark its run running (the step handler does that first)."""
    started = store.start_turn(
        user,
        TurnStart(
            conversation_id=conversation,
            run_id=run,
            assistant_message_id=f"a-{run}",
            user_message=user_message(message or f"u-{run}", "What is the weather in Paris?"),
            provider="scripted",
            model="demo",
            now=now,
        ),
    )
    store.mark_running(user, run, now=now)
    return started


def snapshot(text: str = "", seq: int = 0) -> SnapshotUpdate:
    parts: list[dict[str, Any]] = [{"type": "text", "text": text, "state": "done"}] if text else []
    return SnapshotUpdate(parts=parts, metadata={"schemaVersion": 1}, snapshot_seq=seq)


def tool_call(call_id: str, status: Any = "success", user: str = USER, run: str = "r1") -> ToolCallRecord:
    return ToolCallRecord(
        user_id=user,
        run_id=run,
        tool_call_id=call_id,
        tool_name="weather",
        input={"city": "Paris"},
        status=status,
        output={"t": 1} if status == "success" else None,
    )


def request_one_approval(
    store: Store, *, approval_id: str = "ap1", call_id: str = "c1", expires_at: int | None = 10_000
) -> Any:
    approval = ApprovalRecord(
        user_id=USER,
        approval_id=approval_id,
        run_id="r1",
        tool_call_id=call_id,
        tool_name="delete",
        input={"p": "/x"},
        requested_at=1_100,
        expires_at=expires_at,
    )
    return store.request_approval(
        USER,
        "r1",
        approvals=[approval],
        tool_calls=[tool_call(call_id, "awaiting_approval")],
        snapshot=snapshot(),
        checkpoint_state={"step": 0},
        event=NewEvent(
            type="approval",
            chunks=[{"type": "tool-approval-request", "approvalId": approval_id, "toolCallId": call_id}],
        ),
        now=1_100,
    )


# -- turns and conversations ------------------------------------------------------------------


def test_start_turn_writes_messages_run_and_active_run(backend: Backend) -> None:
    store, _ = backend
    started = start(store)
    assert started.user_message is not None and (started.user_message.seq, started.assistant_message.seq) == (1, 2)
    assert started.assistant_message.status == "streaming" and started.assistant_message.run_id == "r1"
    assert started.run.status == "queued" and started.run.assistant_message_seq == 2
    conversation = store.get_conversation(USER, "c1")
    assert (conversation.active_run_id, conversation.status, conversation.last_message_seq) == ("r1", "running", 2)
    assert conversation.title == "What is the weather in Paris?"
    assert [m.message_id for m in store.list_messages(USER, "c1").items] == ["u-r1", "a-r1"]


def test_a_second_active_run_is_refused_and_nothing_is_written(backend: Backend) -> None:
    store, dump = backend
    start(store)
    before = dump()
    with pytest.raises(ActiveRunExists):
        start(store, run="r2")
    assert dump() == before
    with pytest.raises(NotFound):
        store.get_run(USER, "r2")


def test_a_reused_message_id_is_refused_and_nothing_is_written(backend: Backend) -> None:
    store, dump = backend
    start(store)
    finish(store, "completed")
    before = dump()
    with pytest.raises(Conflict):
        start(store, run="r2", message="u-r1")
    assert dump() == before


def test_next_turn_appends_in_order_and_conversations_list_newest_first(backend: Backend) -> None:
    store, _ = backend
    start(store)
    finish(store, "completed")
    start(store, conversation="c2", run="r9", now=3_000)
    start(store, run="r2", now=5_000)
    assert [m.seq for m in store.list_messages(USER, "c1").items] == [1, 2, 3, 4]
    assert [c.conversation_id for c in store.list_conversations(USER).items] == ["c1", "c2"]
    page = store.list_messages(USER, "c1", limit=3)
    assert len(page.items) == 3 and page.cursor is not None
    assert [m.seq for m in store.list_messages(USER, "c1", after_seq=int(page.items[-1].seq)).items] == [4]


def test_conversation_cursors_page_through_and_a_forged_one_is_invalid_cursor(backend: Backend) -> None:
    """A cursor comes back from a client: only one the store gave out, to this user, is taken (else 400, not 500)."""
    store, _ = backend
    for index in range(3):
        start(store, conversation=f"c{index}", run=f"r{index}", now=1_000 + index)
    first = store.list_conversations(USER, limit=2)
    assert first.cursor is not None
    rest = store.list_conversations(USER, limit=2, cursor=first.cursor)
    assert [c.conversation_id for c in [*first.items, *rest.items]] == ["c2", "c1", "c0"] and rest.cursor is None
    start(store, conversation="theirs", run="r-theirs", user=OTHER)
    theirs = store.list_conversations(OTHER, limit=1)
    mine = store.list_conversations(USER, limit=1).cursor
    forged = ["%%%", "bm9wZQ==", "e30=", "x" * 5000, "-1", "1e3", "١"]
    if theirs.cursor is not None:
        forged.append(theirs.cursor)  # another user's cursor (a backend whose cursor names the user refuses it)
    for cursor in forged:
        if cursor == mine:
            continue
        with pytest.raises(InvalidCursor):
            store.list_conversations(USER, limit=1, cursor=cursor)


def test_another_user_sees_nothing(backend: Backend) -> None:
    store, _ = backend
    start(store)
    request_one_approval(store)
    for read in (
        lambda: store.get_conversation(OTHER, "c1"),
        lambda: store.get_run(OTHER, "r1"),
        lambda: store.get_approval(OTHER, "ap1"),
        lambda: store.get_message(OTHER, "c1", "u-r1"),
        lambda: store.list_messages(OTHER, "c1"),
        lambda: store.decide_approval(OTHER, "ap1", approved=True, reason=None, now=1_200),
        lambda: store.append_events(OTHER, "r1", [NewEvent(type="x", chunks=[])], now=1),
        lambda: store.events_after(OTHER, "r1", 0, now=1),
    ):
        with pytest.raises(NotFound):
            read()
    assert store.list_conversations(OTHER).items == []
    assert store.pending_approvals(OTHER) == []
    # the same ids under the other user are independent
    start(store, user=OTHER)
    assert store.get_run(OTHER, "r1").user_id == OTHER


def test_ids_that_would_break_keys_are_refused(backend: Backend) -> None:
    store, _ = backend
    with pytest.raises(ValueError, match="invalid conversation id"):
        start(store, conversation="c#1")
    with pytest.raises(ValueError, match="invalid user id"):
        start(store, user="a b")


def test_delete_conversation_is_refused_while_running(backend: Backend) -> None:
    store, _ = backend
    start(store)
    with pytest.raises(Conflict):
        store.delete_conversation(USER, "c1")
    finish(store, "completed")
    store.delete_conversation(USER, "c1")
    with pytest.raises(NotFound):
        store.get_conversation(USER, "c1")


# -- steps and runs ------------------------------------------------------------------------------


def finish(store: Store, status: Any, *, event: bool = True, now: int = 2_000) -> Any:
    done = NewEvent(type="done", chunks=[{"type": "finish", "finishReason": "stop"}]) if event else None
    return store.finish_run(
        USER,
        "r1",
        FinishRun(
            status=status,
            snapshot=snapshot("Sunny.", seq=5),
            finish_reason="stop" if status == "completed" else None,
            usage={"inputTokens": 3, "outputTokens": 1},
            error={"message": "boom"} if status == "failed" else None,
            event=done,
            now=now,
        ),
    )


def save_step(store: Store, index: int = 0, calls: list[ToolCallRecord] | None = None) -> Any:
    step = StepRecordRow(
        user_id=USER,
        run_id="r1",
        step_index=index,
        finish_reason="tool-calls",
        usage={"inputTokens": 3},
        started_at=1_000,
        ended_at=1_050,
    )
    return store.save_step(
        USER,
        "r1",
        step=step,
        tool_calls=calls or [tool_call("c1")],
        snapshot=snapshot("Looking…", seq=3),
        checkpoint_state={"steps": index + 1},
        now=1_050,
    )


def test_step_end_writes_step_tools_snapshot_and_checkpoint(backend: Backend) -> None:
    store, dump = backend
    start(store)
    checkpoint = save_step(store)
    assert (checkpoint.seq, checkpoint.step_index, checkpoint.state) == (1, 0, {"steps": 1})
    assert store.latest_checkpoint(USER, "r1") == checkpoint
    assert [c.status for c in store.list_tool_calls(USER, "r1")] == ["success"]
    message = store.get_message(USER, "c1", "a-r1")
    assert (message.parts[0]["text"], message.snapshot_seq, message.content) == ("Looking…", 3, "Looking…")
    before = dump()
    with pytest.raises(Conflict):
        save_step(store)  # the same step twice: refused, nothing changes
    assert dump() == before


def test_completion_fixes_the_message_and_clears_the_active_run(backend: Backend) -> None:
    store, _ = backend
    start(store)
    run = finish(store, "completed")
    assert (run.status, run.finish_reason, run.ended_at, run.last_event_seq) == ("completed", "stop", 2_000, 1)
    message = store.get_message(USER, "c1", "a-r1")
    assert (message.status, message.completed_at, message.content) == ("completed", 2_000, "Sunny.")
    conversation = store.get_conversation(USER, "c1")
    assert (conversation.active_run_id, conversation.status) == (None, "idle")
    assert [e.type for e in store.events_after(USER, "r1", 0, now=2_001)] == ["done"]


def test_terminal_states_never_go_back(backend: Backend) -> None:
    store, dump = backend
    start(store)
    finish(store, "completed")
    assert finish(store, "completed").status == "completed"  # a retried finalize is harmless
    before = dump()
    for attempt in (
        lambda: finish(store, "failed"),
        lambda: store.mark_running(USER, "r1", now=3_000),
        lambda: save_step(store),
    ):
        with pytest.raises(TerminalState):
            attempt()
    assert dump() == before


def test_an_abort_mark_is_kept_on_a_live_run_and_never_touches_a_terminal_one(backend: Backend) -> None:
    store, dump = backend
    start(store)
    marked = store.request_abort(USER, "r1", reason="user_cancelled")
    assert (marked.status, marked.cancel_reason) == ("running", "user_cancelled")
    assert store.request_abort(USER, "r1", reason="other").cancel_reason == "user_cancelled"  # the first stands
    finish(store, "completed")
    before = dump()
    assert store.request_abort(USER, "r1", reason="late").status == "completed"
    assert dump() == before


def test_failure_closes_only_running_nodes(backend: Backend) -> None:
    store, _ = backend
    start(store)
    save_step(store, calls=[tool_call("done"), tool_call("approved", "awaiting_approval")])
    request_one_approval(store, approval_id="ap-ok", call_id="approved")
    store.decide_approval(USER, "ap-ok", approved=True, reason=None, now=1_200)
    store.settle_approval(USER, "ap-ok", now=1_201)
    store.mark_running(USER, "r1", now=1_202)
    assert (
        store.claim_tool_call(
            USER, "r1", "approved", tool_name="delete", input={}, step_index=0, claim_token="w1", now=1_203
        ).kind
        == "claimed"
    )
    store.claim_tool_call(USER, "r1", "fresh", tool_name="weather", input={}, step_index=1, claim_token="w1", now=1_204)
    finish(store, "failed")
    calls = {c.tool_call_id: c.status for c in store.list_tool_calls(USER, "r1")}
    assert calls == {"done": "success", "approved": "error", "fresh": "error"}
    assert store.get_approval(USER, "ap-ok").status == "approved"
    assert store.get_message(USER, "c1", "a-r1").status == "failed"
    assert store.get_conversation(USER, "c1").status == "failed"


# -- approvals ---------------------------------------------------------------------------------------


def test_approval_request_is_atomic_and_decided_exactly_once(backend: Backend) -> None:
    store, _ = backend
    start(store)
    checkpoint = request_one_approval(store)
    assert checkpoint.reason == "approval_wait"
    run = store.get_run(USER, "r1")
    assert (run.status, run.last_event_seq) == ("waiting_approval", 1)
    assert store.get_approval(USER, "ap1").checkpoint_seq == checkpoint.seq
    assert [a.approval_id for a in store.pending_approvals(USER)] == ["ap1"]
    assert store.attach_task_token(USER, "ap1", "token-1").task_token == "token-1"
    first = store.decide_approval(USER, "ap1", approved=True, reason="fine", now=1_200)
    assert first.first and first.approval.status == "processing" and first.approval.decision == "approved"
    again = store.decide_approval(USER, "ap1", approved=True, reason="fine", now=1_300)
    assert not again.first and again.approval.decided_at == 1_200
    with pytest.raises(DecisionConflict):
        store.decide_approval(USER, "ap1", approved=False, reason=None, now=1_300)
    with pytest.raises(Conflict):
        store.attach_task_token(USER, "ap1", "token-2")
    settled = store.settle_approval(USER, "ap1", now=1_301)
    assert settled.status == "approved"
    assert store.settle_approval(USER, "ap1", now=1_302).status == "approved"
    assert store.expire_approval(USER, "ap1", now=99_999).status == "approved"  # decided: never undone
    assert [c.status for c in store.list_tool_calls(USER, "r1")] == ["pending"]
    assert store.pending_approvals(USER) == []


def test_denial_marks_the_tool_call_denied(backend: Backend) -> None:
    store, _ = backend
    start(store)
    request_one_approval(store)
    store.decide_approval(USER, "ap1", approved=False, reason="no", now=1_200)
    assert store.settle_approval(USER, "ap1", now=1_201).status == "denied"
    assert [c.status for c in store.list_tool_calls(USER, "r1")] == ["denied"]


def test_an_expired_approval_is_gone(backend: Backend) -> None:
    store, _ = backend
    start(store)
    request_one_approval(store, expires_at=5_000)
    assert store.expiring_approvals(before=6_000) == [(USER, "ap1")]
    with pytest.raises(Gone):
        store.decide_approval(USER, "ap1", approved=True, reason=None, now=5_000)
    assert store.get_approval(USER, "ap1").status == "expired"
    assert [c.status for c in store.list_tool_calls(USER, "r1")] == ["expired"]
    with pytest.raises(Gone):
        store.decide_approval(USER, "ap1", approved=True, reason=None, now=5_001)


def test_a_second_approval_for_the_same_tool_call_is_refused(backend: Backend) -> None:
    store, dump = backend
    start(store)
    request_one_approval(store)
    before = dump()
    with pytest.raises(Conflict):
        request_one_approval(store, approval_id="ap2")
    assert dump() == before


def test_fifty_concurrent_claims_decide_once(backend: Backend) -> None:
    store, _ = backend
    start(store)
    request_one_approval(store)
    results: list[Any] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(50)

    def claim(index: int) -> None:
        barrier.wait()
        try:
            results.append(
                store.decide_approval(USER, "ap1", approved=index % 2 == 0, reason=str(index), now=1_200 + index)
            )
        except (DecisionConflict, Conflict) as error:
            errors.append(error)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    firsts = [r for r in results if r.first]
    assert len(firsts) == 1
    decision = firsts[0].approval.decision
    assert all(r.approval.decision == decision for r in results)
    assert len(results) + len(errors) == 50
    assert store.get_approval(USER, "ap1").decision == decision


# -- tool execution exactly once ----------------------------------------------------------------


def test_tool_claims_run_the_body_once(backend: Backend) -> None:
    store, _ = backend
    start(store)
    runs: list[str] = []
    barrier = threading.Barrier(2)

    def worker(name: str) -> None:
        barrier.wait()
        claim = store.claim_tool_call(
            USER, "r1", "c9", tool_name="weather", input={"city": "Paris"}, step_index=0, claim_token=name, now=1_100
        )
        if claim.kind == "claimed":
            try:
                store.start_tool_call(USER, "r1", "c9", claim_token=name, now=1_150)
            except Conflict:
                return  # the other worker took the claim over before this one started
            runs.append(name)
            store.record_tool_outcome(USER, "r1", "c9", claim_token=name, output={"t": 20}, now=1_200)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(runs) == 1
    later = store.claim_tool_call(
        USER, "r1", "c9", tool_name="weather", input={}, step_index=0, claim_token="w3", now=1_300
    )
    assert later.kind == "done" and later.record.output == {"t": 20}


def test_a_crash_after_the_body_started_is_reported_not_rerun(backend: Backend) -> None:
    store, _ = backend
    start(store)
    first = store.claim_tool_call(
        USER, "r1", "c1", tool_name="weather", input={}, step_index=0, claim_token="crashed", now=1_100
    )
    assert first.kind == "claimed"
    store.start_tool_call(USER, "r1", "c1", claim_token="crashed", now=1_101)
    retry = store.claim_tool_call(
        USER, "r1", "c1", tool_name="weather", input={}, step_index=0, claim_token="retry", now=1_200
    )
    assert retry.kind == "in_progress" and retry.record.claim_token == "crashed"
    with pytest.raises(Conflict):
        store.record_tool_outcome(USER, "r1", "c1", claim_token="retry", output=1, now=1_300)
    done = store.record_tool_outcome(USER, "r1", "c1", claim_token="crashed", error={"message": "bad"}, now=1_400)
    assert done.status == "error"


def test_a_claim_whose_holder_died_before_starting_is_taken_over(backend: Backend) -> None:
    store, _ = backend
    start(store)
    store.claim_tool_call(USER, "r1", "c1", tool_name="weather", input={}, step_index=0, claim_token="dead", now=1_100)
    takeover = store.claim_tool_call(
        USER, "r1", "c1", tool_name="weather", input={}, step_index=0, claim_token="alive", now=1_200
    )
    assert takeover.kind == "claimed" and takeover.record.claim_token == "alive"
    with pytest.raises(Conflict):
        store.start_tool_call(USER, "r1", "c1", claim_token="dead", now=1_201)  # the old holder can no longer start
    assert store.start_tool_call(USER, "r1", "c1", claim_token="alive", now=1_202).started_at == 1_202


def test_client_outputs_answer_pending_tool_calls_once(backend: Backend) -> None:
    store, _ = backend
    start(store)
    question = ToolCallRecord(
        user_id=USER,
        run_id="r1",
        tool_call_id="q1",
        tool_name="ask_user_question",
        input={"q": "Which city?"},
        status="pending",
    )
    step = StepRecordRow(user_id=USER, run_id="r1", step_index=0, started_at=1)
    store.save_step(
        USER,
        "r1",
        step=step,
        tool_calls=[question],
        snapshot=snapshot(),
        checkpoint_state={},
        now=2,
        run_status="waiting_user",
    )
    assert store.get_run(USER, "r1").status == "waiting_user"
    assert store.get_conversation(USER, "c1").status == "waiting_user"
    assert store.attach_run_token(USER, "r1", "tok").task_token == "tok"
    answered = store.answer_tool_call(USER, "r1", "q1", output={"city": "Paris"}, now=3)
    assert answered.status == "success"
    assert (
        store.answer_tool_call(USER, "r1", "q1", output={"city": "Paris"}, now=4).ended_at == 3
    )  # same answer: idempotent
    with pytest.raises(Conflict):
        store.answer_tool_call(USER, "r1", "q1", output={"city": "Rome"}, now=5)


def assistant_status(store: Store) -> str:
    return next(m.status for m in store.list_messages(USER, "c1").items if m.role == "assistant")


@pytest.mark.parametrize("wait", ["waiting_user", "waiting_approval"])
def test_the_message_waits_with_its_run_and_streams_again_when_it_runs(backend: Backend, wait: str) -> None:
    """One vocabulary (`LIVE_MESSAGE_STATUS`): a waiting run's message is `waiting`, whichever the wait."""
    store, _ = backend
    start(store)
    assert assistant_status(store) == "streaming"
    if wait == "waiting_approval":
        request_one_approval(store)
    else:
        step = StepRecordRow(user_id=USER, run_id="r1", step_index=0, started_at=1)
        store.save_step(
            USER, "r1", step=step, tool_calls=[], snapshot=snapshot(), checkpoint_state={}, now=2, run_status=wait
        )
    assert (store.get_conversation(USER, "c1").status, assistant_status(store)) == (wait, "waiting")
    store.mark_running(USER, "r1", now=3)
    assert (store.get_conversation(USER, "c1").status, assistant_status(store)) == ("running", "streaming")


def test_an_initial_checkpoint_needs_no_step(backend: Backend) -> None:
    store, _ = backend
    start(store)
    first = store.save_checkpoint(USER, "r1", state={"messages": []}, reason="step_end", now=2)
    assert (first.seq, store.get_run(USER, "r1").checkpoint_seq) == (1, 1)
    assert store.latest_checkpoint(USER, "r1") == first


# -- events -----------------------------------------------------------------------------------------


def test_events_get_consecutive_seqs_and_expired_deltas_are_filtered(backend: Backend) -> None:
    store, _ = backend
    start(store)
    first = store.append_events(
        USER,
        "r1",
        [
            NewEvent(type="start", chunks=[{"type": "start"}]),
            NewEvent(type="delta", chunks=[{"type": "text-delta", "id": "t", "delta": "a"}], durable=False),
        ],
        now=1_000,
    )
    second = store.append_events(USER, "r1", [NewEvent(type="done", chunks=[{"type": "finish"}])], now=1_001)
    assert [e.seq for e in [*first, *second]] == [1, 2, 3]
    assert first[1].expires_at is not None and first[0].expires_at is None
    assert [e.seq for e in store.events_after(USER, "r1", 1, now=1_002)] == [2, 3]
    far_future = int(first[1].expires_at or 0) + 1
    assert [e.seq for e in store.events_after(USER, "r1", 0, now=far_future)] == [1, 3]
    assert store.get_run(USER, "r1").last_event_seq == 3


def test_concurrent_appends_leave_no_gap_and_no_duplicate(backend: Backend) -> None:
    store, _ = backend
    start(store)
    barrier = threading.Barrier(8)

    def writer(index: int) -> None:
        barrier.wait()
        for n in range(10):
            store.append_events(
                USER, "r1", [NewEvent(type="x", chunks=[{"type": "data-w", "data": [index, n]}])], now=1_000
            )

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = store.events_after(USER, "r1", 0, now=1_001)
    assert [e.seq for e in events] == list(range(1, 81))
    assert sorted(tuple(e.chunks[0]["data"]) for e in events) == sorted((i, n) for i in range(8) for n in range(10))  # type: ignore[arg-type]


# -- artifacts and sweeps -----------------------------------------------------------------------------


def test_artifacts_are_deduplicated(backend: Backend) -> None:
    store, _ = backend
    record = ArtifactRecord(
        user_id=USER,
        artifact_id="art1",
        conversation_id="c1",
        message_id="a-r1",
        run_id="r1",
        name="report.pdf",
        storage_key="users/alice/x",
        created_at=1,
    )
    assert store.put_artifact(record).name == "report.pdf"
    assert store.put_artifact(record.model_copy(update={"name": "other"})).name == "report.pdf"
    assert [a.artifact_id for a in store.list_message_artifacts(USER, "a-r1")] == ["art1"]
    with pytest.raises(NotFound):
        store.get_artifact(OTHER, "art1")


def test_stale_runs_are_found_until_they_end(backend: Backend) -> None:
    store, _ = backend
    start(store, now=1_000)
    store.mark_running(USER, "r1", now=1_000)
    assert store.stale_runs(heartbeat_before=2_000) == [(USER, "r1")]
    store.heartbeat(USER, "r1", now=3_000)
    assert store.stale_runs(heartbeat_before=2_000) == []
    finish(store, "aborted", now=4_000)
    assert store.stale_runs(heartbeat_before=10_000) == []


def test_the_sweep_returns_the_stalest_runs_first_across_many(backend: Backend) -> None:
    store, _ = backend
    for n in range(40):
        start(store, conversation=f"c{n}", run=f"r{n}", now=1_000)
        store.heartbeat(USER, f"r{n}", now=10_000 - n * 100)  # r39 is the stalest
    assert store.stale_runs(heartbeat_before=20_000, limit=5) == [(USER, f"r{n}") for n in range(39, 34, -1)]
    assert sorted(store.stale_runs(heartbeat_before=20_000)) == sorted((USER, f"r{n}") for n in range(40))
    assert store.stale_runs(heartbeat_before=6_250) == [(USER, f"r{n}") for n in range(39, 37, -1)]


# -- redaction before persistence ----------------------------------------------------------------------


def test_secrets_are_masked_in_parts_tool_calls_and_events_but_not_in_the_checkpoint(backend: Backend) -> None:
    store, _ = backend
    start(store)
    secret_input = {"url": "https://api.example", "headers": {"Authorization": "Bearer abc.def.ghi123"}}
    call = ToolCallRecord(
        user_id=USER,
        run_id="r1",
        tool_call_id="c1",
        tool_name="http",
        input=secret_input,
        status="success",
        output={"cookie": "s=1", "body": "token sk-proj-abcdefghijklmnop1234"},
    )
    parts = [
        {
            "type": "tool-http",
            "toolCallId": "c1",
            "state": "output-available",
            "input": secret_input,
            "output": {"password": "hunter2"},
        }
    ]
    step = StepRecordRow(user_id=USER, run_id="r1", step_index=0, started_at=1)
    checkpoint = store.save_step(
        USER,
        "r1",
        step=step,
        tool_calls=[call],
        snapshot=SnapshotUpdate(parts=parts, metadata=None, snapshot_seq=1),
        checkpoint_state={"input": secret_input},
        now=2,
    )
    store.append_events(
        USER,
        "r1",
        [
            NewEvent(
                type="tool_use",
                chunks=[
                    {"type": "tool-input-available", "toolCallId": "c1", "toolName": "http", "input": secret_input}
                ],
            )
        ],
        now=3,
    )
    (stored_call,) = store.list_tool_calls(USER, "r1")
    assert stored_call.input == {"url": "https://api.example", "headers": {"Authorization": "*****"}}
    assert stored_call.output == {"cookie": "*****", "body": "token *****"}
    stored_part = store.get_message(USER, "c1", "a-r1").parts[0]
    assert stored_part["input"] == {"url": "https://api.example", "headers": {"Authorization": "*****"}}
    assert stored_part["output"] == {"password": "*****"}
    (event,) = store.events_after(USER, "r1", 0, now=4)
    assert event.chunks[0]["input"] == {"url": "https://api.example", "headers": {"Authorization": "*****"}}
    # the checkpoint is what an approved tool would run with: kept exact (encrypted at rest, never sent out)
    assert store.latest_checkpoint(USER, "r1") == checkpoint
    assert checkpoint.state == {"input": secret_input}


def test_a_regenerated_answer_is_superseded_with_the_new_turn(backend: Backend) -> None:
    store, _ = backend
    start(store)
    finish(store, "completed")
    regenerated = TurnStart(
        conversation_id="c1",
        run_id="r2",
        assistant_message_id="a-r2",
        user_message=None,
        branch=BranchFrom(after="u-r1"),
        now=3_000,
    )
    store.start_turn(USER, regenerated)
    messages = store.list_messages(USER, "c1").items
    assert [(m.message_id, m.superseded_by) for m in messages] == [("u-r1", None), ("a-r1", "r2"), ("a-r2", None)]


def test_only_a_finished_answer_is_superseded_and_nothing_is_written_otherwise(backend: Backend) -> None:
    store, dump = backend
    start(store)
    store.finish_run(
        USER, "r1", FinishRun(status="aborted", snapshot=snapshot(), cancel_reason="user_cancelled", now=1_500)
    )
    before = dump()
    turn = TurnStart(
        conversation_id="c1",
        run_id="r2",
        assistant_message_id="a-r2",
        user_message=None,
        branch=BranchFrom(after="nope"),  # not a message of the active branch
        now=2,
    )
    with pytest.raises(Conflict):
        store.start_turn(USER, turn)
    assert dump() == before


def test_an_ended_runs_log_is_closed(backend: Backend) -> None:
    store, _ = backend
    start(store)
    finish(store, "completed")
    with pytest.raises(TerminalState):
        store.append_events(USER, "r1", [NewEvent(type="text", chunks=[{"type": "text-start", "id": "t"}])], now=2_500)
    run = store.get_run(USER, "r1")
    message = store.get_message(USER, "c1", "a-r1")
    assert message.snapshot_seq == run.last_event_seq, "the final snapshot includes the end event"


def test_an_end_built_before_the_last_events_is_refused_and_nothing_is_written(backend: Backend) -> None:
    store, dump = backend
    start(store)
    store.append_events(USER, "r1", [NewEvent(type="text", chunks=[{"type": "text-start", "id": "t"}])], now=1_200)
    before = dump()
    stale = FinishRun(
        status="aborted",
        snapshot=snapshot(seq=0),
        event=NewEvent(type="abort", chunks=[{"type": "abort"}]),
        now=1_300,
    )
    with pytest.raises(ConcurrentUpdate):
        store.finish_run(USER, "r1", stale)
    assert dump() == before


def test_a_failed_runs_error_is_masked_in_the_message_metadata(backend: Backend) -> None:
    store, _ = backend
    start(store)
    error = {"message": "provider said: invalid key sk-proj-abcdefghijklmnop1234"}
    store.finish_run(
        USER,
        "r1",
        FinishRun(
            status="failed",
            snapshot=SnapshotUpdate(parts=[], metadata={"schemaVersion": 1, "error": error}, snapshot_seq=0),
            error=error,
            now=2_000,
        ),
    )
    message = store.get_message(USER, "c1", "a-r1")
    assert message.metadata is not None
    assert "abcdefghijklmnop1234" not in str(message.metadata)
    assert "provider said: invalid key" in str(message.metadata)


def test_the_decider_is_recorded_once_with_the_decision(backend: Backend) -> None:
    store, _ = backend
    start(store)
    request_one_approval(store)
    store.decide_approval(USER, "ap1", approved=True, reason=None, now=1_200, decided_by="link")
    again = store.decide_approval(USER, "ap1", approved=True, reason=None, now=1_300, decided_by=USER)
    assert again.approval.decided_by == "link"  # the same decision again changes nothing
    assert store.settle_approval(USER, "ap1", now=1_301).decided_by == "link"


def test_a_notification_is_recorded_once_also_on_an_ended_run(backend: Backend) -> None:
    store, _ = backend
    start(store)
    assert store.mark_notified(USER, "r1", "approval:ap1")
    assert not store.mark_notified(USER, "r1", "approval:ap1")
    finish(store, "completed")
    assert store.mark_notified(USER, "r1", "end") and not store.mark_notified(USER, "r1", "end")
    run = store.get_run(USER, "r1")
    assert (run.status, run.notified) == ("completed", ["approval:ap1", "end"])
    with pytest.raises(NotFound):
        store.mark_notified("bob", "r1", "end")  # scoped to the user like every write
