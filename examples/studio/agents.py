"""A writing studio: three agents behind one deployment, picked per conversation.

    STEPLINE_AGENT=examples.studio.agents:agents STEPLINE_MODEL=openai:gpt-5.1 stepline dev

`agents` is a mapping `name -> Agent`: the web UI offers a picker, `GET /api/agents` lists them,
and a new chat names one in its request body (`{"agent": "editor"}`), which stays the
conversation's agent for its life. The first entry is the default.

- `writer` outlines and drafts; saving a draft into the workspace needs the author's approval.
- `editor` reads a draft, measures it, and asks the author before cutting (`ask_author` is a
  client-side tool: a question the web UI answers with `addToolOutput`).
- `headline` is one fixed-format answer per turn: no tools, structured instructions, one step.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import Field

from stepline import Agent, RunContext, is_step_count, tool
from stepline.store import workspace

DraftPath = Annotated[str, Field(pattern=r"^drafts/[\w-]+\.md$", description="Such as drafts/launch-post.md")]


@tool
def outline(
    topic: Annotated[str, Field(description="What the piece is about")],
    sections: Annotated[int, Field(ge=2, le=8)] = 3,
) -> dict[str, Any]:
    """A skeleton for a piece: the section headings to fill in."""
    return {"topic": topic, "sections": [f"{i + 1}. {heading}" for i, heading in enumerate(_headings(sections))]}


def _headings(count: int) -> list[str]:
    base = ["Why it matters", "What changed", "How it works", "What it costs", "What people say", "What is next"]
    return (base + [f"Part {n}" for n in range(len(base) + 1, 9)])[:count]


@tool(approval="user-approval")
def save_draft(path: DraftPath, text: str, context: RunContext) -> dict[str, Any]:
    """Save a draft in the conversation's workspace (the author approves every save)."""
    if context.blobs is None:
        raise RuntimeError("this runtime has no file storage")
    workspace.write_file(context.blobs, context.user_id, context.conversation_id, path, text.encode(), "text/markdown")
    return {"saved": path, "words": len(text.split())}


@tool
def read_draft(path: DraftPath, context: RunContext) -> dict[str, Any]:
    """Read a draft from the conversation's workspace."""
    if context.blobs is None:
        raise RuntimeError("this runtime has no file storage")
    data = workspace.read_file(context.blobs, context.user_id, context.conversation_id, path)
    return {"path": path, "text": data.decode()}


@tool
def text_stats(text: str) -> dict[str, Any]:
    """Words, sentences and the average sentence length of a text."""
    sentences = [s for s in re.split(r"[.!?]+\s*", text) if s.strip()]
    words = len(text.split())
    return {"words": words, "sentences": len(sentences), "words_per_sentence": round(words / max(len(sentences), 1), 1)}


@tool(client_side=True)
def ask_author(question: Annotated[str, Field(description="One question, answerable in a sentence")]) -> str:
    """Ask the author before changing their text; the web UI shows the question and sends the answer."""
    raise NotImplementedError  # client-side: the body never runs


def _author(context: RunContext) -> str:
    return str(context.claims.get("name") or "the author")


def writer_instructions(context: RunContext) -> str:
    """The writer's system prompt, addressed to the author the run started for."""
    return (
        f"You are a staff writer working with {_author(context)}. Outline first, then draft in plain "
        "Markdown; save a draft only when asked."
    )


def editor_instructions(context: RunContext) -> str:
    """The editor's system prompt."""
    return (
        f"You are an editor for {_author(context)}. Read the draft, measure it with text_stats, and "
        "ask the author with ask_author before proposing to cut anything."
    )


agents = {
    "writer": Agent(
        name="writer",
        description="Outlines and drafts pieces; saves drafts with your approval.",
        instructions=writer_instructions,
        tools=[outline, save_draft],
        temperature=0.8,
        stop_when=is_step_count(6),
    ),
    "editor": Agent(
        name="editor",
        description="Reads a draft, measures it and suggests cuts, asking you first.",
        instructions=editor_instructions,
        tools=[read_draft, text_stats, ask_author],
        temperature=0.2,
        stop_when=is_step_count(8),
    ),
    "headline": Agent(
        name="headline",
        description="Three headlines for a piece, one per line.",
        instructions="Answer with exactly three headlines, one per line, no numbering, no quotes.",
        temperature=1.0,
        max_output_tokens=200,
        stop_when=is_step_count(1),
    ),
}
