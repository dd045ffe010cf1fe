"""examples/mcp_notes: an Agent with an MCP toolset, against the real stdio server (a subprocess per call).

The server is the example's own `server.py` on the official SDK's `MCPServer`; the agent lists it
as `tools=[McpToolset([StdioServer(...)])]`, and the delete's approval comes from the server entry.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from examples.mcp_notes.agent import notes_agent
from stepline.agent.loading import load_agents
from stepline.testing import Harness, call, scripted_model, text

NAMES = ["notes_delete_note", "notes_list_notes", "notes_read_note", "notes_write_note"]


def test_the_model_is_offered_the_servers_tools_and_a_delete_needs_approval(tmp_path: Path) -> None:
    agent = notes_agent(tmp_path)
    assert sorted(t.name for t in agent.tools) == NAMES
    assert agent.approval_of("notes_delete_note") == "required"
    assert agent.approval_of("notes_write_note") == "none"
    model = scripted_model([call("notes_list_notes"), text("You have no notes.")])
    result = Harness(lambda: notes_agent(tmp_path), model=model).turn("my notes?")
    assert result.status == "completed" and result.tool("notes_list_notes").status == "success"
    offered = {t.name: t for t in model.calls[0].tools}
    assert sorted(offered) == NAMES
    assert offered["notes_delete_note"].description == "Delete a note for good."


def test_a_note_is_deleted_only_once_a_person_approves(tmp_path: Path) -> None:
    model = scripted_model(
        [
            call("notes_write_note", title="milk", text="Buy milk"),
            call("notes_delete_note", title="milk"),
            text("Deleted the note milk."),
        ]
    )
    harness = Harness(lambda: notes_agent(tmp_path), model=model)
    waiting = harness.turn("note: buy milk, then delete it")
    assert waiting.status == "waiting_approval"
    assert [a.tool_name for a in waiting.pending_approvals] == ["notes_delete_note"]
    assert (tmp_path / "milk.md").read_text() == "Buy milk"  # written, not deleted yet
    done = harness.resume(waiting.run_id, approve=True)
    assert done.status == "completed" and done.text == "Deleted the note milk."
    assert done.tool("notes_delete_note").output == {"result": "deleted milk"}
    assert not (tmp_path / "milk.md").exists()
    assert [c.name for c in done.tool_calls] == ["notes_write_note", "notes_delete_note"]


def test_a_denied_delete_leaves_the_note(tmp_path: Path) -> None:
    (tmp_path / "milk.md").write_text("Buy milk")
    model = scripted_model([call("notes_delete_note", title="milk"), text("Kept it.")])
    result = Harness(lambda: notes_agent(tmp_path), model=model).turn("delete milk", approve=False)
    assert result.status == "completed" and result.tool("notes_delete_note").status == "denied"
    assert (tmp_path / "milk.md").read_text() == "Buy milk"


def test_a_server_error_is_a_tool_error_the_model_reads(tmp_path: Path) -> None:
    model = scripted_model([call("notes_read_note", title="nothing"), text("There is no such note.")])
    result = Harness(lambda: notes_agent(tmp_path), model=model).turn("read nothing")
    assert result.status == "completed"
    assert "there is no note titled 'nothing'" in (result.tool("notes_read_note").error or "")


def test_the_reference_loads_with_its_folder_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTES_DIR", str(tmp_path))
    monkeypatch.delitem(sys.modules, "examples.mcp_notes.agent")  # imported afresh, as a new process would
    (tmp_path / "milk.md").write_text("Buy milk")
    model = scripted_model([call("notes_read_note", title="milk"), text("Buy milk.")])
    result = Harness("examples.mcp_notes.agent:agent", model=model).turn("read milk")
    assert result.tool("notes_read_note").output == {"result": "Buy milk"}
    assert load_agents("examples.mcp_notes.agent:agent").names() == ["notes"]
