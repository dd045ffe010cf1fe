"""The agent of the scheduled-run browser test (`STEPLINE_AGENT=tests.browser.scheduled_agents:AGENTS`).

`reports` has a nightly schedule owned by the local user of `stepline dev` (no sign-in). Its
occurrence's prompt plays: a sentence and `gather`, which holds until the test releases it (so
the page finds the run at work, deterministically), then `publish`, which needs the owner's
approval, then the answer. A later message that mentions tomorrow gets a one-step answer.
A scripted model (a script book), no provider.
"""

from __future__ import annotations

import threading

from stepline import Agent, tool
from stepline.agent.unattended import Schedule
from stepline.api.identity import DEFAULT_LOCAL_USER
from stepline.llm.script_book import ScriptBook
from tests.browser.book import step, text
from tests.browser.book import tool as tool_call

GATHERING = threading.Event()
"""Set when `gather` runs: the scheduled run is at work."""
RELEASE = threading.Event()
"""Set by the test to let `gather` return."""
PUBLISHED: list[str] = []
TITLE = "nightly · 2031-01-15 02:00 Europe/Paris"
"""The scheduled conversation's title for the occurrence the test fires (2031-01-15T01:00:00Z)."""
ANSWER = "Published the nightly report."
FOLLOW_UP_ANSWER = "Tomorrow the report runs at 02:00 again."


@tool
def gather() -> dict[str, int]:
    """Gather the night's numbers."""
    GATHERING.set()
    RELEASE.wait(60)
    return {"rows": 3}


@tool(approval="user-approval")
def publish(title: str) -> str:
    """Publish the report under a title."""
    PUBLISHED.append(title)
    return f"published {title}"


BOOK = {
    "scripts": [
        {
            "name": "nightly",
            "match": ["nightly report"],
            "steps": [
                step(
                    [*text(["Gathering ", "the numbers."]), *tool_call("call-gather", "gather", {})],
                    finish="tool-calls",
                ),
                step(tool_call("call-publish", "publish", {"title": "Nightly"}), finish="tool-calls"),
                step(text([ANSWER])),
            ],
        },
        {"name": "tomorrow", "match": ["tomorrow"], "steps": [step(text([FOLLOW_UP_ANSWER]))]},
    ],
}

AGENTS = {
    "reports": Agent(
        name="reports",
        description="Writes the nightly report",
        model=ScriptBook.from_book(BOOK, model_id="nightly-book"),
        tools=[gather, publish],
        schedules=[
            Schedule(
                name="nightly",
                cron="0 2 * * *",
                timezone="Europe/Paris",
                input="Write the nightly report.",
                owner=DEFAULT_LOCAL_USER,
            )
        ],
    ),
}
