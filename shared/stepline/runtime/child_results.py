"""A child run's end answers its parent's tool call, which resumes the parent once nothing else is open.

A child run (`stepline.runtime.children`) records its parent on its context (`parent`: the parent's
run id, the tool call it answers, its depth). Whichever call ends the child — FinalizeRun, FailRun,
an abort, the reconciler — reports the end here, every time it passes (a retried end too): the
answer is the store's compare-and-set (`answer_tool_call`), so the parent's call is answered once,
and `waits.answer` resumes the parent's workflow when every call it waits for has its answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from collections.abc import Collection, Sequence
from typing import cast

from pydantic import JsonValue

from ..agent.delegation import DEFAULT_MAX_DEPTH, agent_tools_of
from ..agent.loading import UnknownAgentError
from ..loop.state import LoopState, UsageTotals
from ..protocol._json import loads_strict
from ..store.errors import Conflict, NotFound, TerminalState
from ..store.records import TERMINAL, WAITING_RUN, ConversationRecord, RunRecord, ToolCallRecord
from .budget_wait import pending_ids
from .services import Services
from .waits import answer, run_approvals, run_state

__all__ = [
    "CHILD_PREFIX",
    "ParentLink",
    "child_result",
    "child_raises",
    "child_run_id",
    "child_runs",
    "children_at_work",
    "is_child_conversation",
    "missing_child_agent",
    "parent_of",
    "report_end",
    "shown_status",
    "usage_with_children",
]

_LOG = logging.getLogger("stepline.runtime")
CHILD_PREFIX = "sub-"
"""A child run's id (and its conversation's) starts with this: `sub-` and 32 hex digits."""
_CHILD_ID = re.compile(CHILD_PREFIX + "[0-9a-f]{32}")
ParentLink = dict[str, JsonValue]
"""`{"runId", "toolCallId", "toolName", "conversationId", "depth", "result"}` on a child run's context."""


def child_run_id(parent_run_id: str, tool_call_id: str) -> str:
    """The child run of one tool call: the same id in every process and on every retry."""
    digest = hashlib.sha256(f"{parent_run_id}\n{tool_call_id}".encode()).hexdigest()[:32]
    return f"{CHILD_PREFIX}{digest}"


def is_child_conversation(conversation_id: str) -> bool:
    """A child run's conversation (its id is the child run's): the user's list leaves it out."""
    return _CHILD_ID.fullmatch(conversation_id) is not None


def parent_of(run: RunRecord) -> ParentLink | None:
    """The parent link of a child run (None: a run a person or a system started)."""
    parent = (run.context or {}).get("parent")
    return cast(ParentLink, parent) if isinstance(parent, dict) else None


def missing_child_agent(services: Services, run: RunRecord) -> bool:
    """A child run whose agent the deployment no longer has (it fails, never runs another agent)."""
    if parent_of(run) is None:
        return False
    try:
        services.agent(run.agent)
    except UnknownAgentError:
        return True
    return False


def child_runs(services: Services, run: RunRecord) -> list[RunRecord]:
    """The child runs started for the run's agent-tool calls, in call order."""
    delegated = agent_tools_of(services.agent_of_run(run.agent))
    if not delegated:
        return []
    found: list[RunRecord] = []
    calls = sorted(services.store.list_tool_calls(run.user_id, run.run_id), key=lambda c: c.step_index)
    for call in calls:
        if call.tool_name in delegated:
            with contextlib.suppress(NotFound):  # refused, or not started yet
                found.append(services.store.get_run(run.user_id, child_run_id(run.run_id, call.tool_call_id)))
    return found


def children_at_work(services: Services, run: RunRecord, levels: int = DEFAULT_MAX_DEPTH) -> bool:
    """True while a sub-agent of `run` (or of theirs, `levels` deep) is about to start, queued or running.

    A run waiting for its sub-agents is `waiting_user`, but its stream follows it on while one of
    them works (their progress reaches its log) or has ended while the parent has not taken its
    result yet (the parent resumes next); once each waits for a person, the stream stops as at
    any wait.
    """
    if levels < 1 or run.status != "waiting_user":
        return False
    delegated = agent_tools_of(services.agent_of_run(run.agent))
    if not delegated:  # an agent without sub-agents: a question's wait reads nothing more
        return False
    calls = services.store.list_tool_calls(run.user_id, run.run_id)
    for call in calls:
        if call.status != "pending" or call.tool_name not in delegated:
            continue
        try:
            child = services.store.get_run(run.user_id, child_run_id(run.run_id, call.tool_call_id))
        except NotFound:  # AwaitInput starts it next
            return True
        if child.status in ("queued", "running") or children_at_work(services, child, levels - 1):
            return True
        if _answered(services, child):  # decided, its worker not yet run: it goes on next
            return True
        if child.status in TERMINAL["run"]:  # ended, its result on its way to the parent: about to resume
            return True
    return _resuming(calls, delegated)


def _answered(services: Services, run: RunRecord) -> bool:
    """A waiting run whose every request to a person has its answer: its worker resumes it next.

    A decision (or an answer) resumes the run's workflow, but the run reads waiting until its next
    step marks it running; the continuation that carried the decision has already sent its settled
    part, so a parent's stream that took this for a wait ended before the child went on. A wait for
    sub-agents alone is left to theirs (`children_at_work`).
    """
    if run.status not in WAITING_RUN:
        return False
    state = run_state(services, run.user_id, run.run_id)
    ids = pending_ids(state)
    questions = {c.tool_call_id for c in state.pending_client_calls}
    if not ids and not questions:
        return False
    approvals = run_approvals(services, run.user_id, run.run_id, state)
    if len(approvals) < len(ids) or any(a.status == "requested" for a in approvals):
        return False
    delegated = agent_tools_of(services.agent_of_run(run.agent))
    return not any(
        c.status not in TERMINAL["tool_call"] and (c.tool_call_id in questions or c.tool_name in delegated)
        for c in services.store.list_tool_calls(run.user_id, run.run_id)
    )


def _resuming(calls: Sequence[ToolCallRecord], delegated: Collection[str]) -> bool:
    """Every call of the run's wait has its answer and one was a sub-agent's: the parent resumes next.

    Between the last child's answer (`answer_tool_call`) and the parent's next step marking it
    running, the run still reads `waiting_user`; a stream that stopped there would miss the answer.
    """
    if not calls:
        return False
    latest = max(c.step_index for c in calls)
    wait = [c for c in calls if c.step_index == latest]
    return any(c.tool_name in delegated for c in wait) and all(c.status in TERMINAL["tool_call"] for c in wait)


def shown_status(services: Services, conversation: ConversationRecord) -> ConversationRecord:
    """The conversation as its user sees it: `waiting_approval` while a sub-agent below its run waits for one.

    The run itself waits for its children (`waiting_user`); a descendant at any depth that waits for
    an approval is what the person is asked for.
    """
    if conversation.status != "waiting_user" or conversation.active_run_id is None:
        return conversation
    with contextlib.suppress(NotFound):
        run = services.store.get_run(conversation.user_id, conversation.active_run_id)
        if _approval_below(services, run, DEFAULT_MAX_DEPTH):
            return conversation.model_copy(update={"status": "waiting_approval"})
    return conversation


def _approval_below(services: Services, run: RunRecord, levels: int) -> bool:
    if levels < 1 or run.status != "waiting_user":
        return False
    delegated = agent_tools_of(services.agent_of_run(run.agent))
    calls = services.store.list_tool_calls(run.user_id, run.run_id) if delegated else []
    for call in calls:
        if call.status == "pending" and call.tool_name in delegated:
            with contextlib.suppress(NotFound):
                child = services.store.get_run(run.user_id, child_run_id(run.run_id, call.tool_call_id))
                if child.status == "waiting_approval" or _approval_below(services, child, levels - 1):
                    return True
    return False


def usage_with_children(
    services: Services, run: RunRecord, own: UsageTotals
) -> tuple[dict[str, int | float] | None, list[dict[str, JsonValue]]]:
    """The run's usage with its children's added (theirs include their own children's), and each child's."""
    total, each = own, list[dict[str, JsonValue]]()
    for child in child_runs(services, run):
        usage = UsageTotals.model_validate(child.usage or {})
        total = total.plus(usage)
        parent = parent_of(child) or {}
        entry: dict[str, JsonValue] = {"toolCallId": parent.get("toolCallId"), "agent": child.agent}
        entry["runId"] = child.run_id
        metadata = usage.to_metadata()
        if metadata is not None:
            entry["usage"] = cast(dict[str, JsonValue], metadata)
        each.append(entry)
    return total.to_metadata(), each


def child_result(services: Services, run: RunRecord) -> tuple[JsonValue, str | None]:
    """What the parent's tool call gets from an ended child: `(output, error_text)`."""
    parent = parent_of(run) or {}
    agent = run.agent or "sub-agent"
    if run.status == "failed":
        message = str((run.error or {}).get("message") or "it failed")
        return None, f"the {agent} agent failed: {message}"
    if run.status == "aborted":
        return None, f"the {agent} agent was stopped ({run.cancel_reason or 'aborted'})"
    state = run_state(services, run.user_id, run.run_id)
    text = state.steps[-1].text if state.steps else ""
    if parent.get("result") == "output":
        try:
            return cast(JsonValue, loads_strict(text)), None
        except ValueError:
            return None, f"the {agent} agent's answer is not the structured output it should be"
    return text, None


def report_end(services: Services, user_id: str, run_id: str) -> None:
    """An ended child's result to its parent's tool call (nothing for a run without a parent)."""
    run = services.store.get_run(user_id, run_id)
    parent = parent_of(run)
    if parent is None or run.status not in TERMINAL["run"]:
        return
    output, error_text = child_result(services, run)
    parent_run, call = str(parent["runId"]), str(parent["toolCallId"])
    with contextlib.suppress(Conflict, TerminalState, NotFound):  # answered already, or the parent has ended
        answer(services, user_id, parent_run, call, output=output, error_text=error_text)
        return
    _LOG.info("child run %s ended after its parent %s stopped waiting for it", run_id, parent_run)


def child_raises(services: Services, run: RunRecord, tool_call_ids: Sequence[str]) -> list[dict[str, float]]:
    """What a person raised on the child runs of these tool calls (`raised_limits`; none for a call without one)."""
    found: list[dict[str, float]] = []
    for tool_call_id in tool_call_ids:
        checkpoint = None
        with contextlib.suppress(NotFound):
            checkpoint = services.store.latest_checkpoint(run.user_id, child_run_id(run.run_id, tool_call_id))
        if checkpoint is not None and (raised := LoopState.model_validate(checkpoint.state).raised_limits):
            found.append(raised)
    return found
