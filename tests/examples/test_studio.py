"""examples/studio: several agents behind one deployment, loaded from their STEPLINE_AGENT reference."""

from __future__ import annotations

import pytest

from examples.studio.agents import agents
from stepline.agent.loading import UnknownAgentError, load_agents
from stepline.protocol.model_messages import SystemModelMessage
from stepline.store import workspace
from stepline.testing import Harness, call, scripted_model, step, text

REFERENCE = "examples.studio.agents:agents"


def test_the_reference_loads_every_agent_the_first_being_the_default() -> None:
    loaded = load_agents(REFERENCE)
    assert loaded.names() == ["writer", "editor", "headline"]
    assert loaded.default_name == "writer"
    writer, editor = loaded.get("writer"), loaded.get("editor")
    assert writer.approval_of("save_draft") == "required"
    assert [t.name for t in editor.tools if t.client_side] == ["ask_author"]


def test_a_new_chat_names_its_agent_and_keeps_it_for_the_conversations_life() -> None:
    models = {"headline": scripted_model([text("A\nB\nC"), text("D\nE\nF")]), "writer": scripted_model([])}
    harness = Harness(REFERENCE, model=models)
    first = harness.turn("headlines for our launch post", agent="headline")
    again = harness.turn("more", conversation_id=first.conversation_id, agent="writer")
    assert (first.run.agent, again.run.agent) == ("headline", "headline")
    assert again.text == "D\nE\nF" and models["writer"].calls == []
    call_options = models["headline"].calls[0]
    assert (call_options.temperature, call_options.max_output_tokens) == (1.0, 200)
    system = [m for m in call_options.prompt if isinstance(m, SystemModelMessage)]
    assert system[0].content.startswith("Answer with exactly three headlines")


def test_an_unknown_agent_is_refused_naming_it() -> None:
    harness = Harness(REFERENCE, model=scripted_model([]))
    with pytest.raises(UnknownAgentError, match="no agent named 'poet'.*writer, editor, headline"):
        harness.turn("a sonnet", agent="poet")


def test_the_writer_saves_a_draft_once_the_author_approves() -> None:
    draft = "# Launch\n\nWe ship today."
    model = scripted_model(
        [
            call("outline", topic="launch", sections=2),
            call("save_draft", path="drafts/launch.md", text=draft),
            text("Saved drafts/launch.md."),
        ]
    )
    harness = Harness(agents, model={"writer": model}, claims={"sub": "test-user", "name": "Kim"})
    result = harness.turn("draft the launch post", approve={"save_draft": True})
    assert result.status == "completed"
    assert result.tool("outline").output == {"topic": "launch", "sections": ["1. Why it matters", "2. What changed"]}
    saved = workspace.read_file(harness.blobs, "test-user", result.conversation_id, "drafts/launch.md")
    assert saved.decode() == draft
    assert "working with Kim" in "".join(m.content for m in model.calls[0].prompt if isinstance(m, SystemModelMessage))


def test_the_editor_reads_measures_and_asks_the_author_first() -> None:
    model = scripted_model(
        [
            call("read_draft", path="drafts/post.md"),
            step(call("text_stats", text="One. Two three."), call("ask_author", question="Cut the intro?")),
            text("Cutting the intro, as you said."),
        ]
    )
    harness = Harness(agents, model={"editor": model})
    workspace.write_file(harness.blobs, "test-user", "c-edit", "drafts/post.md", b"One. Two three.")
    result = harness.turn("edit drafts/post.md", conversation_id="c-edit", agent="editor", answer={"ask_author": "yes"})
    assert result.status == "completed"
    assert result.tool("read_draft").output == {"path": "drafts/post.md", "text": "One. Two three."}
    assert result.tool("text_stats").output == {"words": 3, "sentences": 2, "words_per_sentence": 1.5}
    assert result.tool("ask_author").output == "yes"
    assert result.invocations.count("AwaitInput") == 1
