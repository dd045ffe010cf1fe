"""The research desk's lead and a chief three agents deep, for the web UI's sub-agent blocks.

`lead` is `tests.support.desk_agents`' (the default: the researcher and the writer at once, the
writer's save waits for an approval); `chief` asks its manager, who asks the desk's researcher:
three levels of nested traces (chief → manager → researcher), each answered by a script book.
"""

from __future__ import annotations

from examples.research_desk import agents as desk
from stepline import Agent
from tests.support.desk_agents import _book, _calls, _text, lead, researcher  # pyright: ignore[reportPrivateUsage]

manager = Agent(
    name="manager",
    description="Hands a topic to the researcher and reports back.",
    model=_book("manager", "otters", [_calls(("m1", "researcher", '{"topic": "otters"}')), _text("Managed: otters.")]),
    tools=[researcher.as_tool(input=desk.Topic, result="output")],
)
chief = Agent(
    name="chief",
    description="Asks the manager.",
    model=_book("chief", "deep", [_calls(("c1", "manager", '{"task": "otters"}')), _text("The chief's answer.")]),
    tools=[manager.as_tool()],
)
AGENTS = {"lead": lead, "chief": chief}
