"""Approvals: policy statuses, signatures (compatible with the SDK's), every re-check of a decision,
partial decisions, exactly-once execution, and denials reaching the model."""

from __future__ import annotations

from typing import Any

import pytest

from stepline.llm.scripted import ScriptedModel
from stepline.loop.approval import (
    ApprovalDecision,
    InvalidApprovalError,
    canonical_json,
    check_decisions,
    resolve_approval,
    sign_approval,
    verify_approval,
)
from stepline.loop.config import LoopConfig
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import StreamTextResult, stream_text
from stepline.loop.tools import Tool
from stepline.protocol import stream_parts as sp
from stepline.protocol.model_messages import (
    AssistantModelMessage,
    ExecutionDeniedOutput,
    TextOutput,
    ToolApprovalRequestPart,
    ToolApprovalResponsePart,
    ToolCallPart,
    ToolModelMessage,
    ToolResultPart,
)

from .support import Ids, call, collect, kinds, model, run, text_step, tool_step

SECRET = b"test-secret"


class Counter:
    def __init__(self) -> None:
        self.calls: list[Any] = []

    def tool(self, name: str) -> Tool:
        def execute(args: Any) -> str:
            self.calls.append((name, args))
            return f"{name} ok"

        return Tool(name=name, input_schema={"type": "object"}, execute=execute)


# --- policy -------------------------------------------------------------------------------------


def _config(policy: Any) -> LoopConfig:
    return LoopConfig(model=model(), tool_approval=policy, runtime_context="ctx")


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (None, ("not-applicable", None)),
        ({"other": "user-approval"}, ("not-applicable", None)),
        ({"delete": "approved"}, ("approved", None)),
        ({"delete": "denied"}, ("denied", None)),
        ({"delete": "user-approval"}, ("user-approval", None)),
        ({"delete": ("denied", "too dangerous")}, ("denied", "too dangerous")),
        (
            {"delete": lambda name, input, ctx: "user-approval" if input["path"] == "/" else None},
            ("user-approval", None),
        ),
        ({"delete": lambda name, input, ctx: None}, ("not-applicable", None)),
        (lambda name, input, ctx: ("approved", f"{name} in {ctx}"), ("approved", "delete in ctx")),
    ],
)
def test_policy_statuses(policy: Any, expected: tuple[str, str | None]) -> None:
    assert run(lambda: resolve_approval(_config(policy), "delete", {"path": "/"})) == expected


def test_async_policy() -> None:
    async def policy(name: str, input: Any, ctx: Any) -> Any:
        return ("denied", "async says no")

    assert run(lambda: resolve_approval(_config(policy), "x", {})) == ("denied", "async says no")


# --- signatures ---------------------------------------------------------------------------------

GOLDEN_INPUT = {"path": "/tmp/x", "force": True, "n": 1.5, "tags": ["a", "é"]}
GOLDEN = {
    "approval_id": "aitxt-J2aS7PdbwUr8dhSdTlLNmmod",
    "tool_call_id": "call-1",
    "tool_name": "deleteFile",
    # Produced by ai@7.0.173 streamText with experimental_toolApprovalSecret "test-secret".
    "signature": "CDr7GQAcYWBhjCDx6o35KUQFaaZbmhuuKZmgkgwTL7M",
}


def _pending(**overrides: Any) -> Any:
    from stepline.loop.state import PendingApproval, ToolCallRecord

    fields: dict[str, Any] = {
        "approval_id": GOLDEN["approval_id"],
        "tool_call_id": GOLDEN["tool_call_id"],
        "tool_name": GOLDEN["tool_name"],
        "input": GOLDEN_INPUT,
    }
    fields.update(overrides)
    return PendingApproval(
        approval_id=fields["approval_id"],
        tool_call=ToolCallRecord(
            tool_call_id=fields["tool_call_id"], tool_name=fields["tool_name"], input=fields["input"]
        ),
        requested_at=0,
    )


def test_signature_equals_the_sdks() -> None:
    signature = sign_approval(
        SECRET,
        approval_id=GOLDEN["approval_id"],
        tool_call_id=GOLDEN["tool_call_id"],
        tool_name=GOLDEN["tool_name"],
        input=GOLDEN_INPUT,
    )
    assert signature == GOLDEN["signature"]
    assert verify_approval(SECRET, GOLDEN["signature"], _pending())


def test_canonical_json_sorts_keys_and_formats_numbers_as_javascript() -> None:
    assert canonical_json({"b": 1.0, "a": [2.5, None, "é"]}) == '{"a":[2.5,null,"é"],"b":1}'


@pytest.mark.parametrize(
    "tampered",
    [
        {"approval_id": "aitxt-other"},
        {"tool_call_id": "call-2"},
        {"tool_name": "readFile"},
        {"input": {**GOLDEN_INPUT, "path": "/"}},
    ],
)
def test_tampered_fields_fail_verification(tampered: dict[str, Any]) -> None:
    assert not verify_approval(SECRET, GOLDEN["signature"], _pending(**tampered))


def test_another_secret_fails_verification() -> None:
    assert not verify_approval(b"other-secret", GOLDEN["signature"], _pending())


def test_key_order_of_the_input_does_not_matter() -> None:
    reordered = dict(reversed(list(GOLDEN_INPUT.items())))
    assert verify_approval(SECRET, GOLDEN["signature"], _pending(input=reordered))


# --- check_decisions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("decisions", "message"),
    [
        ([ApprovalDecision(approval_id="nope", approved=True)], "is not pending"),
        (
            [ApprovalDecision(approval_id=GOLDEN["approval_id"], approved=True, tool_call_id="call-9")],
            "another tool call",
        ),
        (
            [ApprovalDecision(approval_id=GOLDEN["approval_id"], approved=True, input={"path": "/"}, has_input=True)],
            "input was changed",
        ),
        ([ApprovalDecision(approval_id=GOLDEN["approval_id"], approved=True)], "missing or invalid signature"),
        ([ApprovalDecision(approval_id=GOLDEN["approval_id"], approved=True, signature="AAAA")], "invalid signature"),
        (
            [
                ApprovalDecision(approval_id=GOLDEN["approval_id"], approved=True, signature=GOLDEN["signature"]),
                ApprovalDecision(approval_id=GOLDEN["approval_id"], approved=False, signature=GOLDEN["signature"]),
            ],
            "decided twice",
        ),
    ],
)
def test_check_decisions_rejects(decisions: list[ApprovalDecision], message: str) -> None:
    with pytest.raises(InvalidApprovalError, match=message):
        check_decisions([_pending()], decisions, secret=SECRET)


def test_check_decisions_accepts_a_matching_signed_decision() -> None:
    decision = ApprovalDecision(
        approval_id=GOLDEN["approval_id"],
        approved=True,
        tool_call_id=GOLDEN["tool_call_id"],
        input=dict(GOLDEN_INPUT),
        has_input=True,
        signature=GOLDEN["signature"],
    )
    ((pending, matched),) = check_decisions([_pending()], [decision], secret=SECRET)
    assert pending.approval_id == GOLDEN["approval_id"] and matched is decision


def test_without_a_secret_no_signature_is_needed() -> None:
    decision = ApprovalDecision(approval_id=GOLDEN["approval_id"], approved=True)
    assert len(check_decisions([_pending()], [decision], secret=None)) == 1


# --- in the loop --------------------------------------------------------------------------------


def _pause(counter: Counter, *calls: list[Any], secret: bytes | None = None) -> StreamTextResult:
    """A run that stops with the given calls waiting for approval (`delete*` need approval)."""
    scripted = model(tool_step(*calls))

    async def scenario() -> StreamTextResult:
        result = stream_text(
            model=scripted,
            prompt="clean up",
            tools=[counter.tool("delete"), counter.tool("delete2"), counter.tool("read")],
            tool_approval={"delete": "user-approval", "delete2": "user-approval"},
            approval_secret=secret,
            stop_when=is_step_count(5),
            new_id=Ids(),
        )
        await collect(result)
        return result

    result = run(scenario)
    assert result.outcome is not None and result.outcome.kind == "await-approval"
    return result


def _resume(
    paused: StreamTextResult,
    counter: Counter,
    decisions: list[ApprovalDecision],
    scripted: ScriptedModel,
    **options: Any,
) -> tuple[StreamTextResult, list[sp.TextStreamPart]]:
    async def scenario() -> tuple[StreamTextResult, list[sp.TextStreamPart]]:
        result = stream_text(
            model=scripted,
            state=paused.state,
            approval_decisions=decisions,
            tools=[counter.tool("delete"), counter.tool("delete2"), counter.tool("read")],
            tool_approval=options.pop("tool_approval", {"delete": "user-approval", "delete2": "user-approval"}),
            stop_when=is_step_count(5),
            **options,
        )
        return result, await collect(result)

    return run(scenario)


def test_a_user_approval_request_pauses_with_the_call_not_run() -> None:
    counter = Counter()
    paused = _pause(counter, call("c1", "delete", '{"path":"/tmp/x"}'), call("c2", "read"))
    assert [name for name, _ in counter.calls] == ["read"]  # calls needing no approval run at once
    (pending,) = paused.state.pending_approvals
    assert pending.tool_call.tool_call_id == "c1" and pending.signature is None
    assistant = paused.state.response_messages[0]
    assert isinstance(assistant, AssistantModelMessage)
    # The approval request follows its own call, as in the SDK.
    assert [type(p) for p in assistant.content] == [ToolCallPart, ToolApprovalRequestPart, ToolCallPart]


def test_approved_call_runs_exactly_once_and_the_same_assistant_message_continues() -> None:
    counter = Counter()
    paused = _pause(counter, call("c1", "delete", '{"path":"/tmp/x"}'))
    approval_id = paused.state.pending_approvals[0].approval_id
    scripted = model(text_step("Deleted."))
    result, parts = _resume(paused, counter, [ApprovalDecision(approval_id=approval_id, approved=True)], scripted)
    assert counter.calls == [("delete", {"path": "/tmp/x"})]
    assert kinds(parts)[:3] == ["start", "tool-result", "start-step"]
    assert result.state.message_id == paused.state.message_id
    # The approval response and the result land in the paused step's tool message.
    messages = result.state.response_messages
    assert [type(m) for m in messages] == [AssistantModelMessage, ToolModelMessage, AssistantModelMessage]
    tool_message = messages[1]
    assert isinstance(tool_message, ToolModelMessage)
    assert [type(p) for p in tool_message.content] == [ToolApprovalResponsePart, ToolResultPart]
    # The model sees the call and its result, without the approval bookkeeping.
    prompt = scripted.calls[0].prompt
    assert isinstance(prompt[-1], ToolModelMessage)
    (result_part,) = prompt[-1].content
    assert isinstance(result_part, ToolResultPart) and result_part.output == TextOutput(value="delete ok")
    assert result.state.pending_approvals == []

    # The same decision again is rejected: nothing is pending any more; the tool does not run again.
    again = model(text_step("unused"))
    replay, replay_parts = _resume(result, counter, [ApprovalDecision(approval_id=approval_id, approved=True)], again)
    assert isinstance(replay.error, InvalidApprovalError)
    assert "error" in kinds(replay_parts)
    assert len(counter.calls) == 1
    assert again.calls == []


def test_denial_becomes_execution_denied_in_the_next_prompt() -> None:
    counter = Counter()
    paused = _pause(counter, call("c1", "delete", '{"path":"/"}'))
    approval_id = paused.state.pending_approvals[0].approval_id
    scripted = model(text_step("I left it."))
    decision = ApprovalDecision(approval_id=approval_id, approved=False, reason="not today")
    result, parts = _resume(paused, counter, [decision], scripted)
    assert counter.calls == []
    (denied,) = [p for p in parts if isinstance(p, sp.ToolOutputDenied)]
    assert (denied.tool_call_id, denied.tool_name) == ("c1", "delete")
    tool_message = scripted.calls[0].prompt[-1]
    assert isinstance(tool_message, ToolModelMessage)
    (result_part,) = tool_message.content
    assert isinstance(result_part, ToolResultPart)
    assert result_part.output == ExecutionDeniedOutput(reason="not today")
    record = result.state.steps[0].tool_results[0]
    assert record.denied is True and record.denial_reason == "not today"


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        (lambda aid: ApprovalDecision(approval_id="aitxt-unknown", approved=True), "is not pending"),
        (lambda aid: ApprovalDecision(approval_id=aid, approved=True, tool_call_id="c-other"), "another tool call"),
        (
            lambda aid: ApprovalDecision(approval_id=aid, approved=True, input={"path": "/"}, has_input=True),
            "input was changed",
        ),
    ],
)
def test_a_rejected_decision_runs_nothing_and_calls_no_model(decision: Any, message: str) -> None:
    counter = Counter()
    paused = _pause(counter, call("c1", "delete", '{"path":"/tmp/x"}'))
    approval_id = paused.state.pending_approvals[0].approval_id
    scripted = model(text_step("unused"))
    result, parts = _resume(paused, counter, [decision(approval_id)], scripted)
    assert isinstance(result.error, InvalidApprovalError) and message in str(result.error)
    assert counter.calls == []
    assert scripted.calls == []
    assert kinds(parts) == ["start", "error"]


def test_signed_requests_and_checked_decisions() -> None:
    counter = Counter()
    paused = _pause(counter, call("c1", "delete", '{"path":"/tmp/x"}'), secret=SECRET)
    (pending,) = paused.state.pending_approvals
    expected = sign_approval(
        SECRET, approval_id=pending.approval_id, tool_call_id="c1", tool_name="delete", input={"path": "/tmp/x"}
    )
    assert pending.signature == expected

    # Without the signature the decision is rejected…
    unsigned = model(text_step("unused"))
    rejected, _ = _resume(
        paused,
        counter,
        [ApprovalDecision(approval_id=pending.approval_id, approved=True)],
        unsigned,
        approval_secret=SECRET,
    )
    assert isinstance(rejected.error, InvalidApprovalError)
    assert counter.calls == [] and unsigned.calls == []

    # …with it, the tool runs.
    signed = model(text_step("Deleted."))
    decision = ApprovalDecision(approval_id=pending.approval_id, approved=True, signature=expected)
    result, _ = _resume(paused, counter, [decision], signed, approval_secret=SECRET)
    assert result.error is None
    assert counter.calls == [("delete", {"path": "/tmp/x"})]


def test_the_signature_travels_on_the_approval_request_chunk() -> None:
    counter = Counter()
    scripted = model(tool_step(call("c1", "delete", '{"path":"/tmp/x"}')))

    async def scenario() -> list[sp.TextStreamPart]:
        result = stream_text(
            model=scripted,
            prompt="x",
            tools=[counter.tool("delete")],
            tool_approval={"delete": "user-approval"},
            approval_secret=SECRET,
            new_id=Ids(),
        )
        return await collect(result)

    parts = run(scenario)
    (request,) = [p for p in parts if isinstance(p, sp.ToolApprovalRequest)]
    assert request.signature == sign_approval(
        SECRET, approval_id=request.approval_id, tool_call_id="c1", tool_name="delete", input={"path": "/tmp/x"}
    )


def test_the_policy_is_asked_again_when_the_decision_comes_back() -> None:
    counter = Counter()
    paused = _pause(counter, call("c1", "delete", '{"path":"/tmp/x"}'))
    approval_id = paused.state.pending_approvals[0].approval_id
    scripted = model(text_step("Not allowed any more."))
    result, parts = _resume(
        paused,
        counter,
        [ApprovalDecision(approval_id=approval_id, approved=True)],
        scripted,
        tool_approval={"delete": ("denied", "policy changed")},
    )
    assert counter.calls == []
    assert "tool-output-denied" in kinds(parts)
    (result_part,) = scripted.calls[0].prompt[-1].content  # type: ignore[union-attr]
    assert isinstance(result_part, ToolResultPart)
    assert result_part.output == ExecutionDeniedOutput(reason="policy changed")


def test_partial_decisions_keep_the_rest_pending_and_each_call_runs_once() -> None:
    counter = Counter()
    paused = _pause(counter, call("c1", "delete", '{"path":"/a"}'), call("c2", "delete2", '{"path":"/b"}'))
    first, second = paused.state.pending_approvals
    assert (first.tool_call.tool_call_id, second.tool_call.tool_call_id) == ("c1", "c2")

    # Decide only the first: it runs; the second stays pending; the model is not called yet.
    idle = model(text_step("unused"))
    halfway, parts = _resume(paused, counter, [ApprovalDecision(approval_id=first.approval_id, approved=True)], idle)
    assert halfway.error is None
    assert counter.calls == [("delete", {"path": "/a"})]
    assert [p.approval_id for p in halfway.state.pending_approvals] == [second.approval_id]
    assert idle.calls == []
    assert halfway.outcome is not None and halfway.outcome.kind == "await-approval"
    assert "tool-result" in kinds(parts)

    # Decide the second: it runs; the first does not run again; the model continues with both results.
    scripted = model(text_step("Both handled."))
    done, _ = _resume(halfway, counter, [ApprovalDecision(approval_id=second.approval_id, approved=True)], scripted)
    assert counter.calls == [("delete", {"path": "/a"}), ("delete2", {"path": "/b"})]
    assert done.state.pending_approvals == []
    tool_message = scripted.calls[0].prompt[-1]
    assert isinstance(tool_message, ToolModelMessage)
    assert sorted(p.tool_call_id for p in tool_message.content if isinstance(p, ToolResultPart)) == ["c1", "c2"]
    assert done.outcome is not None and done.outcome.kind == "finished"


def test_automatic_statuses_need_no_human() -> None:
    counter = Counter()
    scripted = model(tool_step(call("c1", "delete"), call("c2", "delete2")), text_step("ok"))

    async def scenario() -> list[sp.TextStreamPart]:
        result = stream_text(
            model=scripted,
            prompt="x",
            tools=[counter.tool("delete"), counter.tool("delete2")],
            tool_approval={"delete": "approved", "delete2": ("denied", "never")},
            stop_when=is_step_count(2),
        )
        return await collect(result)

    parts = run(scenario)
    assert [name for name, _ in counter.calls] == ["delete"]
    requests = [p for p in parts if isinstance(p, sp.ToolApprovalRequest)]
    assert [r.is_automatic for r in requests] == [True, True]
    responses = [p for p in parts if isinstance(p, sp.ToolApprovalResponse)]
    assert [(r.approved, r.reason) for r in responses] == [(True, None), (False, "never")]
    outputs = {p.tool_call_id: p.output for p in scripted.calls[1].prompt[-1].content}  # type: ignore[union-attr]
    assert outputs == {"c1": TextOutput(value="delete ok"), "c2": ExecutionDeniedOutput(reason="never")}


def test_sdk_style_continuation_does_not_rerun_an_already_answered_call() -> None:
    """`messages` ending in a tool message that already holds c1's result re-runs only c2."""
    counter = Counter()
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "delete both"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool-call", "toolCallId": "c1", "toolName": "delete", "input": {"path": "/a"}},
                {"type": "tool-approval-request", "approvalId": "ap-1", "toolCallId": "c1"},
                {"type": "tool-call", "toolCallId": "c2", "toolName": "delete2", "input": {"path": "/b"}},
                {"type": "tool-approval-request", "approvalId": "ap-2", "toolCallId": "c2"},
            ],
        },
        {
            "role": "tool",
            "content": [
                {"type": "tool-approval-response", "approvalId": "ap-1", "approved": True},
                {
                    "type": "tool-result",
                    "toolCallId": "c1",
                    "toolName": "delete",
                    "output": {"type": "text", "value": "delete ok"},
                },
                {"type": "tool-approval-response", "approvalId": "ap-2", "approved": True},
            ],
        },
    ]
    scripted = model(text_step("Both gone."))

    async def scenario() -> StreamTextResult:
        result = stream_text(
            model=scripted,
            messages=history,
            tools=[counter.tool("delete"), counter.tool("delete2")],
            stop_when=is_step_count(2),
        )
        await collect(result)
        return result

    result = run(scenario)
    assert result.error is None
    assert counter.calls == [("delete2", {"path": "/b"})]
    results = [
        p.tool_call_id
        for m in scripted.calls[0].prompt
        if isinstance(m, ToolModelMessage)
        for p in m.content
        if isinstance(p, ToolResultPart)
    ]
    assert sorted(results) == ["c1", "c2"]
