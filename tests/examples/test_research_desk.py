"""examples/research_desk: a lead that delegates to a researcher (twice, at once) and a writer (with an approval)."""

from __future__ import annotations

import json

from examples.research_desk.agents import Findings
from stepline.agent.delegation import AgentTool
from stepline.agent.loading import load_agents
from stepline.runtime.child_results import child_run_id
from stepline.store import workspace
from stepline.testing import Harness, call, scripted_model, step, text

REFERENCE = "examples.research_desk.agents:agents"
CLAIMS = {"sub": "test-user", "name": "Ann"}


def _findings(facts: list[str], sources: list[str]) -> str:
    return Findings(facts=facts, sources=sources).model_dump_json()


def test_only_the_lead_is_deployed_and_its_agents_are_its_tools() -> None:
    loaded = load_agents(REFERENCE)
    assert loaded.names() == ["lead"]
    tools = {t.name: t for t in loaded.get("lead").tools}
    assert all(isinstance(t, AgentTool) for t in tools.values()) and set(tools) == {"researcher", "writer"}
    assert tools["researcher"].input_schema["required"] == ["topic"]
    assert loaded.get("writer").approval_of("save_brief") == "required"  # found through the lead's tools


def test_a_brief_researched_twice_at_once_then_written_and_saved_once_approved() -> None:
    otters = _findings(["Otters use rocks as tools."], ["otters"])
    kelp = _findings(["Kelp grows 60 cm a day."], ["kelp"])
    brief = "# Otters and kelp\n\nOtters use rocks; kelp grows fast."
    models = {
        "lead": scripted_model(
            [
                step(call("researcher", topic="otters"), call("researcher", topic="kelp")),
                call("writer", task=f"notes: {otters} {kelp}"),
                text("Saved briefs/otters.md."),
            ]
        ),
        "researcher": scripted_model(
            [call("search_sources", query="otters"), text(otters), call("search_sources", query="kelp"), text(kelp)]
        ),
        "writer": scripted_model([call("save_brief", title="otters", text=brief), text("Saved to briefs/otters.md.")]),
    }
    harness = Harness(REFERENCE, model=models, claims=CLAIMS)
    result = harness.turn("A brief on otters and kelp, please.")
    assert result.status == "waiting_user"  # the writer's child run waits for the approval
    (approval,) = harness.store.pending_approvals("test-user")
    assert approval.tool_name == "save_brief"
    done = harness.resume(result.run.run_id, approve=True)
    assert done.status == "completed" and done.text == "Saved briefs/otters.md."
    research = [c for c in done.tool_calls if c.name == "researcher"]
    assert [c.output for c in research] == [json.loads(otters), json.loads(kelp)]
    assert done.tool("writer").output == "Saved to briefs/otters.md."
    first = harness.run(child_run_id(done.run.run_id, research[0].tool_call_id))
    (search,) = harness.store.list_tool_calls("test-user", first.run_id)  # the researcher's own ledger
    assert [hit["source"] for hit in search.output] == ["otters", "kelp"]  # type: ignore[index, union-attr]
    writer_run = harness.run(child_run_id(done.run.run_id, done.tool("writer").tool_call_id))
    assert writer_run.context is not None and writer_run.context["claims"] == CLAIMS
    saved = workspace.read_file(harness.blobs, "test-user", writer_run.conversation_id, "briefs/otters.md")
    assert saved.decode() == brief
    for model in models.values():
        model.assert_consumed()
