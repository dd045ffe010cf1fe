"""The run inspector's sub-agent tree: each agent-tool call's child run, its own children, and the way back up."""

from __future__ import annotations

from stepline import Agent
from stepline.runs_cli import render_run
from stepline.runtime.child_results import child_run_id
from stepline.runtime.inspection import run_view
from stepline.testing import Harness, call, scripted_model, text

USER = "test-user"


def _desk() -> tuple[Harness, str]:
    """A lead that asks a researcher twice at once; the first researcher asks a fact checker."""
    checker = Agent(name="checker", model=scripted_model([text("checked")]))
    researcher_model = scripted_model([call("checker", task="check"), text("found"), text("found again")])
    researcher = Agent(name="researcher", model=researcher_model, tools=[checker.as_tool()])
    lead_model = scripted_model([[call("researcher", task="a"), call("researcher", task="b")], text("done")])
    lead = Agent(name="lead", model=lead_model, tools=[researcher.as_tool()])
    harness = Harness(lead)
    result = harness.turn("go")
    assert result.status == "completed"
    return harness, result.run.run_id


def test_a_runs_view_holds_its_sub_agent_tree_three_levels_down_and_each_child_points_back() -> None:
    harness, run_id = _desk()
    view = run_view(harness.store, USER, run_id)
    first, second = view["subAgents"]
    assert [first["agent"], second["agent"]] == ["researcher", "researcher"]
    assert {first["status"], second["status"]} == {"completed"}
    assert {first["runId"], second["runId"]} == {
        child_run_id(run_id, first["toolCallId"]),
        child_run_id(run_id, second["toolCallId"]),
    }
    nested = [sub for sub in (first, second) if sub["subAgents"]]
    (asker,) = nested  # one researcher asked the checker, the other answered at once
    (checker,) = asker["subAgents"]
    assert (checker["agent"], checker["status"], checker["subAgents"]) == ("checker", "completed", [])
    # The tool call in its step carries the same child.
    tools = [tool for step in view["steps"] for tool in step["tools"]]
    assert [tool["subAgent"]["runId"] for tool in tools] == [first["runId"], second["runId"]]
    assert view["parent"] is None
    child = run_view(harness.store, USER, checker["runId"])
    assert child["parent"] is not None
    assert (child["parent"]["runId"], child["parent"]["toolCallId"]) == (asker["runId"], checker["toolCallId"])
    assert child["subAgents"] == []


def test_a_run_without_agent_tools_has_an_empty_tree_and_the_cli_shows_the_tree() -> None:
    harness, run_id = _desk()
    text_view = render_run(run_view(harness.store, USER, run_id))
    assert "sub-agents (stepline runs show RUN_ID):" in text_view
    lines = text_view.splitlines()
    checker_line = next(line for line in lines if line.lstrip().startswith("checker"))
    researcher_lines = [line for line in lines if line.startswith("  researcher")]
    assert len(researcher_lines) == 2 and checker_line.startswith("    checker")  # one level deeper
    assert "sub-agent researcher: run sub-" in text_view  # under the tool call in its step
    solo = Harness(Agent(name="solo", model=scripted_model([text("hi")])))
    alone = solo.turn("hello")
    view = run_view(solo.store, USER, alone.run.run_id)
    assert (view["subAgents"], view["parent"]) == ([], None)
    assert "sub-agents" not in render_run(view)
