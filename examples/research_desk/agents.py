"""A research desk: a lead agent that delegates to a researcher and a writer (agents as tools).

    STEPLINE_AGENT=examples.research_desk.agents:agents STEPLINE_MODEL=openai:gpt-5.1 stepline dev

Only `lead` is deployed (`agents` names it); `researcher` and `writer` are its tools
(`Agent.as_tool`): each call the lead makes is a durable child run with that agent's own
instructions and tools and the lead's run context (the same user and claims). The lead may call
the researcher several times in one step (the calls run at once) and waits, holding nothing, until
they have answered.

- `researcher` searches the desk's sources (`search_sources`) and answers with its findings as
  structured output (`Findings`): the lead reads them as JSON (`result="output"`).
- `writer` turns notes into a brief and saves it in the conversation's workspace
  (`save_brief`), which the person approves: the approval is the writer's child run's, decided with
  the same webhook or link as any other.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from stepline import Agent, RunContext, is_step_count, tool
from stepline.store import workspace

SOURCES: dict[str, str] = {
    "otters": "Sea otters use rocks as tools and hold hands while sleeping.",
    "tides": "Two high tides a day: the Moon's pull, and the Earth's turning beneath it.",
    "kelp": "Giant kelp grows up to 60 cm a day; otters keep kelp forests alive by eating urchins.",
}


class Findings(BaseModel):
    """What the researcher hands back: facts with the source each came from."""

    facts: list[str]
    sources: list[str]


class Topic(BaseModel):
    """The researcher's input: one topic, in a few words."""

    topic: Annotated[str, Field(description="A few words, such as 'sea otters'")]


@tool
def search_sources(query: Annotated[str, Field(description="Words to look for")]) -> list[dict[str, str]]:
    """Search the desk's sources; each hit has its source's name and its text."""
    words = {w.lower().strip(".,") for w in query.split()}
    hits = [(name, text) for name, text in SOURCES.items() if words & ({name} | set(text.lower().split()))]
    return [{"source": name, "text": text} for name, text in hits]


@tool(approval="user-approval")
def save_brief(
    title: Annotated[str, Field(pattern=r"^[\w-]{1,40}$", description="Such as otter-brief")],
    text: str,
    context: RunContext,
) -> dict[str, Any]:
    """Save a brief in the conversation's workspace (the person approves every save)."""
    if context.blobs is None:
        raise RuntimeError("this runtime has no file storage")
    path = f"briefs/{title}.md"
    workspace.write_file(context.blobs, context.user_id, context.conversation_id, path, text.encode(), "text/markdown")
    return {"saved": path, "words": len(text.split())}


researcher = Agent(
    name="researcher",
    description="Finds facts in the desk's sources.",
    instructions="Search the sources for the topic, then answer with JSON: the facts and their sources.",
    tools=[search_sources],
    output=Findings,
    stop_when=is_step_count(4),
)

writer = Agent(
    name="writer",
    description="Writes a short brief from notes and saves it.",
    instructions="Write a brief of at most 120 words from the notes, save it with save_brief, then say where.",
    tools=[save_brief],
    stop_when=is_step_count(4),
)

lead = Agent(
    name="lead",
    description="Plans a brief: research first, then writing.",
    instructions=(
        "You run a research desk. Ask the researcher about each topic the person names (one call per "
        "topic, all at once), then give the writer the findings as notes. Answer with what was saved."
    ),
    tools=[
        researcher.as_tool(description="Research one topic in the desk's sources.", input=Topic, result="output"),
        writer.as_tool(description="Write and save a brief from notes."),
    ],
    stop_when=is_step_count(6),
)

agents = {"lead": lead}
