"""Starting the child runs of a parent step's agent-tool calls (`stepline.agent.delegation`).

The parent's step ends as for a question (`await-client`): its agent-tool calls are open tool calls
of the run. AwaitInput starts a child run for each, before it parks the parent, so a crash between
the step's end and the starts loses none (AwaitInput is retried), and a second pass starts none
twice: a child's ids are a digest of the parent run and the tool call, and a child that exists is
only asked to run (`start_run` is idempotent, an execution named by its run id).

A child is a run of its own: its own conversation (hidden from the user's list by its id prefix),
run record, checkpoint, event log, tool ledger and approvals, with the child agent's definition
and the parent's context (the same user, claims and body: never more rights than the parent's
user), and `parent` on its context, which its end reads (`stepline.runtime.child_results`). The
link carries the run tree's budget when its root has a run limit (`tree`,
`stepline.runtime.run_tree`): the child's calls count against it with the rest of the tree.

A call beyond the tool's depth or fan-out limit, or of an agent no longer deployed, is answered at
once with a tool error the model reads; the parent then resumes without waiting.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, cast

from pydantic import JsonValue

from ..agent.delegation import AgentTool, agent_tools_of, prompt_of
from ..agent.loading import UnknownAgentError
from ..loop.budget_request import effective_limits
from ..loop.limits import Limits
from ..loop.state import LoopState
from ..store.errors import Conflict, NotFound, TerminalState
from ..store.records import TERMINAL, RunRecord
from .child_results import child_run_id, parent_of, report_end
from .run_tree import tree_link
from .services import Services
from .turn import begin_turn
from .waits import answer

__all__ = ["start_children"]

_LOG = logging.getLogger("stepline.runtime")


def start_children(services: Services, run: RunRecord, state: LoopState) -> None:
    """A child run for each pending agent-tool call of the step (or its refusal, a tool error)."""
    agent = services.agent_of_run(run.agent, run.agent_fingerprint)
    tools = agent_tools_of(agent)
    defined = {t.name for t in agent.tools}
    for gone in [c for c in state.pending_client_calls if c.tool_name not in defined]:  # redeployed without it
        with contextlib.suppress(Conflict, TerminalState):
            error = f"{gone.tool_name} is no longer one of this agent's tools"
            answer(services, run.user_id, run.run_id, gone.tool_call_id, output=None, error_text=error)
    if not tools:
        return
    depth = int(cast(Any, (parent_of(run) or {}).get("depth", 0))) + 1
    limits = agent.limits.over(services.limits) if agent.limits is not None else services.limits
    tree = tree_link(run, effective_limits(limits, state) or Limits(), state.raised_limits)
    started = [c.tool_call_id for s in state.steps for c in s.tool_calls if c.tool_name in tools]
    for call in state.pending_client_calls:
        tool = tools.get(call.tool_name)
        if tool is None:
            continue
        refusal: str | None = None
        if depth > tool.max_depth:
            refusal = f"{tool.name} was not started: sub-agents may nest {tool.max_depth} levels deep"
        elif started.index(call.tool_call_id) >= tool.max_children:
            refusal = f"{tool.name} was not started: this run may start {tool.max_children} sub-agent runs"
        if refusal is None:
            refusal = _start_child(services, run, tool, call.tool_call_id, call.input, depth, tree)
        if refusal is not None:
            with contextlib.suppress(Conflict, TerminalState):
                answer(services, run.user_id, run.run_id, call.tool_call_id, output=None, error_text=refusal)


def _start_child(
    services: Services,
    run: RunRecord,
    tool: AgentTool,
    tool_call_id: str,
    value: JsonValue,
    depth: int,
    tree: dict[str, JsonValue] | None,
) -> str | None:
    """Start (or find) the call's child run; a refusal's text when it cannot be started."""
    child = child_run_id(run.run_id, tool_call_id)
    with contextlib.suppress(NotFound):
        existing = services.store.get_run(run.user_id, child)
        if existing.status in TERMINAL["run"]:
            report_end(services, run.user_id, child)  # it ended, and its answer may not have reached us
        elif services.orchestrator is not None:
            services.orchestrator.start_run(run.user_id, child)  # one execution per run id: harmless
        return None
    context = run.context or {}
    parent: dict[str, JsonValue] = {
        "runId": run.run_id,
        "toolCallId": tool_call_id,
        "toolName": tool.name,
        "conversationId": run.conversation_id,
        "depth": depth,
        "result": tool.result,
    }
    if tree is not None:
        parent["tree"] = tree
    prompt = prompt_of(tool, value)
    try:
        begin_turn(
            services,
            run.user_id,
            conversation_id=child,
            run_id=child,
            assistant_message_id=f"{child}-answer",
            user_message={"id": f"{child}-task", "role": "user", "parts": [{"type": "text", "text": prompt}]},
            title=f"{tool.agent_name}: {prompt[:60]}",
            agent=tool.agent_name,
            claims=cast(dict[str, JsonValue], context.get("claims") or {"sub": run.user_id}),
            body=cast(dict[str, JsonValue], context.get("body") or {}),
            parent=parent,
        )
    except UnknownAgentError:
        return f"{tool.name} was not started: the agent {tool.agent_name} is not deployed"
    except Conflict:  # started meanwhile by another pass
        _LOG.info("child run %s was already started", child)
    return None
