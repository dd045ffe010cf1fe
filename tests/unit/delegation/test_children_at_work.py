"""A parent's stream follows it while a sub-agent works, and until the parent takes the children's answers.

`children_at_work` is what the chat stream asks when the parent reads `waiting_user`. The window
this file pins: the last child's answer is recorded on the parent's call (`answer_tool_call`), the
parent is resumed, but its next step has not marked it running yet — a stream that stopped there
ended before the answer (seen under load as a stream ending on the child's `tool-output-available`).
"""

from __future__ import annotations

from typing import Any

from stepline import Agent, tool
from stepline.runtime.child_results import children_at_work
from stepline.testing import Harness, call, scripted_model, step, text

USER = "test-user"


@tool(approval="user-approval")
def publish(title: str) -> str:
    """Publish."""
    return "published"


@tool(client_side=True)
def ask(question: str) -> str:
    """Ask the person."""
    raise NotImplementedError("answered by the client")


def _waiting_parent(lead_steps: list[Any]) -> tuple[Harness, str]:
    writer = Agent(name="writer", tools=[publish], model=scripted_model([call("publish", title="T"), text("ok")]))
    lead = Agent(name="lead", tools=[writer.as_tool(), ask], model=scripted_model(lead_steps))
    harness = Harness(lead)
    waiting = harness.turn("go")
    return harness, waiting.run.run_id


def test_the_parent_is_at_work_while_its_child_waits_for_nothing_but_it_and_after_the_childs_answer() -> None:
    harness, run_id = _waiting_parent([call("writer", task="write"), text("done")])
    services = harness.services()
    (row,) = services.store.list_tool_calls(USER, run_id)
    parent = services.store.get_run(USER, run_id)
    assert parent.status == "waiting_user"
    assert not children_at_work(services, parent), "the child waits for a person: the stream stops as at any wait"
    services.store.answer_tool_call(USER, run_id, row.tool_call_id, output="ok", error=None, now=1)
    parent = services.store.get_run(USER, run_id)
    assert parent.status == "waiting_user" and children_at_work(services, parent), "answered: it resumes next"


def test_a_question_still_open_beside_the_answered_child_keeps_the_wait() -> None:
    lead_steps = [step(call("writer", task="write"), call("ask", question="which?")), text("x")]
    harness, run_id = _waiting_parent(lead_steps)
    services = harness.services()
    child = next(r for r in services.store.list_tool_calls(USER, run_id) if r.tool_name == "writer")
    services.store.answer_tool_call(USER, run_id, child.tool_call_id, output="ok", error=None, now=1)
    assert not children_at_work(services, services.store.get_run(USER, run_id)), "the question waits for a person"


def test_a_child_whose_approval_was_just_decided_is_about_to_resume() -> None:
    """Decided (the webhook's compare-and-set and settle), its worker not yet run: the child still reads waiting.

    The window seen under load: the continuation that carried the decision settled the raised part
    (so it had sent something) and read the child waiting; the stream ended before the child went on.
    """
    harness, run_id = _waiting_parent([call("writer", task="write"), text("done")])
    services = harness.services()
    parent = services.store.get_run(USER, run_id)
    (approval,) = services.store.pending_approvals(USER)
    assert approval.run_id != run_id and not children_at_work(services, parent), "asked, undecided: a person's turn"
    services.store.decide_approval(USER, approval.approval_id, approved=False, reason="no", now=2)
    services.store.settle_approval(USER, approval.approval_id, now=2)
    child = services.store.get_run(USER, approval.run_id)
    assert child.status == "waiting_approval", "its workflow was not resumed here: the window itself"
    assert children_at_work(services, services.store.get_run(USER, run_id)), "decided: the child resumes next"
