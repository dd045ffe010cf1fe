"""The README's agent, verbatim: its code block runs through `stepline.testing` with a scripted model.

The approval-gated tool must pause the run (nothing written while it waits) and run exactly once
when a person approves it, across the processes the durable path uses (each function invocation
rebuilds the agent from the README's code).
"""

from __future__ import annotations

import re
import types
from pathlib import Path

from stepline import Agent
from stepline.store import workspace
from stepline.store.blobs import BlobRef, MemoryBlobStore
from stepline.testing import Harness, call, scripted_model, text

REPO = Path(__file__).resolve().parents[2]


def readme_agent_code() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.DOTALL)
    assert blocks, "the README has a python block: the agent"
    return blocks[0]


class CountingBlobs(MemoryBlobStore):
    """The workspace, counting the writes that reach it (the tool's side effect)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def put_object(self, key: str, data: bytes, media_type: str | None = None) -> BlobRef:
        self.writes.append(key)
        return super().put_object(key, data, media_type)


def load_readme_agent() -> Agent:
    """The README's block run as a module of its own: a new agent, as each process builds one."""
    module = types.ModuleType("readme_agent")
    exec(compile(readme_agent_code(), "README.md", "exec"), module.__dict__)
    agent = module.agent
    assert isinstance(agent, Agent)
    return agent


def note_script() -> list[object]:
    return [call("save_note", title="milk", body="Buy milk"), text("Saved milk.md.")]


def test_the_readme_agent_is_short_with_a_tool_and_an_approval() -> None:
    assert len([line for line in readme_agent_code().splitlines() if line.strip()]) <= 15
    agent = load_readme_agent()
    assert {t.name: agent.approval_of(t.name) for t in agent.tools} == {"word_count": "none", "save_note": "required"}


def test_its_approval_pauses_the_run_and_the_tool_runs_once_approved() -> None:
    blobs = CountingBlobs()
    harness = Harness(load_readme_agent, model=scripted_model(note_script()), blobs=blobs)
    waiting = harness.turn("note: buy milk")
    assert waiting.status == "waiting_approval"
    assert [a.tool_name for a in waiting.pending_approvals] == ["save_note"]
    assert waiting.tool("save_note").status == "awaiting_approval" and blobs.writes == []
    done = harness.resume(waiting.run_id, approve=True)
    assert done.status == "completed" and done.text == "Saved milk.md."
    assert done.tool("save_note").output == "saved milk.md"
    note = workspace.read_file(blobs, harness.user_id, done.conversation_id, "milk.md")
    assert note == b"Buy milk" and len(blobs.writes) == 1


def test_a_denied_call_never_runs() -> None:
    blobs = CountingBlobs()
    model = scripted_model([*note_script()[:1], text("Not saved.")])
    result = Harness(load_readme_agent, model=model, blobs=blobs).turn("note: buy milk", approve=False)
    assert result.status == "completed" and result.tool("save_note").status == "denied"
    assert blobs.writes == []


def test_its_plain_tool_runs_without_asking() -> None:
    model = scripted_model([call("word_count", text="one two three"), text("Three words.")])
    result = Harness(load_readme_agent, model=model).turn("how many words: one two three")
    assert result.status == "completed" and result.tool("word_count").output == 3
