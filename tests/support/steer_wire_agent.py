"""An agent for the steer-at-the-wire tests (`STEPLINE_AGENT=tests.support.steer_wire_agent:AGENT`).

No model of its own: the server's `STEPLINE_MODEL` (`openai:…` or `anthropic:…`, pointed at the local
wire-format servers of `tests/support/fake_openai.py` and `fake_anthropic.py`). Its one tool,
`long_task`, holds its step open until the test opens `GATE` — once the steering message is stored —
so the message meets the run at the boundary after this tool, however loaded the machine is.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

from stepline import Agent, tool

GATE = threading.Event()
RUNS: Counter[str] = Counter()
GATE_SECONDS = 60


@tool
async def long_task(label: str) -> str:
    """A step of work that lasts until the test lets it finish."""
    opened = await asyncio.to_thread(GATE.wait, GATE_SECONDS)
    RUNS["long_task"] += 1
    return f"done {label}" if opened else f"timed out {label}"


AGENT = Agent(name="wire", tools=[long_task], on_new_message="steer")
