"""Where the worker publishes lifecycle events: after the commit of each transition (`notifications`).

Each function reads what it announces from the store (the committed state, as redacted there), so
a retried worker announces exactly what the first attempt committed.
"""

from __future__ import annotations

from ..agent.delegation import agent_tools_of
from ..loop.state import LoopState
from ..store.records import RunRecord
from .budget_wait import pending_ids
from .notifications import announce, approval_requested, question_asked, run_ended
from .services import Services

__all__ = ["announce_approvals", "announce_end", "announce_question"]


def announce_approvals(services: Services, run: RunRecord, state: LoopState) -> None:
    """One `Approval Requested` per pending approval of `state` that is still requested."""
    for approval_id in pending_ids(state):
        approval = services.store.get_approval(run.user_id, approval_id)
        if approval.run_id == run.run_id and approval.status == "requested":
            keyed = approval_requested(run, approval, services.approval_links)
            announce(services.store, services.notifier, run, keyed)


def announce_question(services: Services, run: RunRecord, state: LoopState) -> None:
    """One `Question Asked` for the client-side tool calls the run waits for."""
    delegated = agent_tools_of(services.agent_of_run(run.agent))  # child runs answer those, not a person
    calls = [(c.tool_call_id, c.tool_name) for c in state.pending_client_calls if c.tool_name not in delegated]
    if calls:
        announce(services.store, services.notifier, run, question_asked(run, calls))


def announce_end(services: Services, user_id: str, run_id: str) -> None:
    """One `Run Completed` / `Run Failed` / `Run Aborted` once the run has ended."""
    run = services.store.get_run(user_id, run_id)
    keyed = run_ended(run)
    if keyed is not None:
        announce(services.store, services.notifier, run, keyed)
