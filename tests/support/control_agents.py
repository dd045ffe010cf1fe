"""An agent for the new-message policy tests (`STEPLINE_AGENT=tests.support.control_agents:AGENT`).

A script book (a scripted model, chosen by the prompt's last user message) and tools that count
how often they really run: `slow_step` takes `SLOW_TOOL_SECONDS`, `remember` needs approval,
`held_step` works in a thread until the test lets it go (`tool_held`), `ask_user` is a question
(the client answers). The server runs in the test's process, so a test reads `RUNS` and `PROMPTS`,
and holds the long task's tool open (`task_held_until`) until its steering message is waiting, or a
model call in the middle of a tool call's input (`input_held`), instead of racing a fixed delay.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Generator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from stepline import Agent, tool
from stepline.llm.base import ModelCallOptions
from stepline.llm.script_book import ScriptBook
from stepline.llm.stream_parts import ModelStreamPart
from stepline.protocol.model_messages import ModelMessage, ModelTextPart, UserModelMessage

if TYPE_CHECKING:
    from tests.support.server import Running

SLOW_TOOL_SECONDS = 1.5
RUNS: Counter[str] = Counter()
"""Tool name -> how many times its body ran (and finished: `slow_step` counts at its end)."""
STARTED: Counter[str] = Counter()
RETURNED: Counter[str] = Counter()
"""Tool name -> how many times the tool returned its result (`held_step`: after its thread's work)."""
PROMPTS: list[list[str]] = []
"""The user texts of every model call's prompt, in order (what the model saw)."""
HOLD_LIMIT_SECONDS = 30.0
"""The longest `task_held_until` holds the tool: a condition that never holds fails the test, not hangs it."""
_TASK_OPEN = threading.Event()
_TASK_OPEN.set()
_HELD_OPEN = threading.Event()
_HELD_OPEN.set()
_INPUT_OPEN = threading.Event()
_INPUT_OPEN.set()

_FINISH: dict[str, Any] = {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}}
_CALLS: dict[str, Any] = {"type": "finish", "finishReason": {"unified": "tool-calls", "raw": "tool_use"}, "usage": {}}


def _text(text: str, *, words: int = 0, delay_ms: int = 0) -> dict[str, Any]:
    deltas = [{"type": "text-delta", "id": "t", "delta": text}]
    deltas += [{"type": "text-delta", "id": "t", "delta": f" w{i}"} for i in range(words)]
    parts = [{"type": "text-start", "id": "t"}, *deltas, {"type": "text-end", "id": "t"}, _FINISH]
    return {"parts": parts, "delayMs": delay_ms}


def _call(name: str, arguments: str, *, lead: str = "", delay_ms: int = 0, words: int = 0) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if lead:
        deltas = [{"type": "text-delta", "id": "t", "delta": lead}]
        deltas += [{"type": "text-delta", "id": "t", "delta": f" w{i}"} for i in range(words)]
        parts += [{"type": "text-start", "id": "t"}, *deltas, {"type": "text-end", "id": "t"}]
    parts += [{"type": "tool-call", "toolCallId": f"call-{name}", "toolName": name, "input": arguments}, _CALLS]
    return {"parts": parts, "delayMs": delay_ms}


def _streamed_call() -> dict[str, Any]:
    """A call of `slow_step` whose input streams in two deltas (`input_held` holds the model after the first)."""
    parts: list[dict[str, Any]] = [
        {"type": "tool-input-start", "id": "call-streamed", "toolName": "slow_step"},
        {"type": "tool-input-delta", "id": "call-streamed", "delta": '{"label": "str'},
        {"type": "tool-input-delta", "id": "call-streamed", "delta": 'eamed"}'},
        {"type": "tool-input-end", "id": "call-streamed"},
        {"type": "tool-call", "toolCallId": "call-streamed", "toolName": "slow_step", "input": '{"label": "streamed"}'},
        _CALLS,
    ]
    return {"parts": parts}


BOOK = ScriptBook.from_book(
    {
        "scripts": [
            {"name": "slow", "match": ["slowly"], "steps": [_text("Slow answer:", words=80, delay_ms=40)]},
            {
                "name": "tool",
                "match": ["slow tool"],
                "steps": [_call("slow_step", '{"label": "one"}'), _text("The slow tool is done.")],
            },
            {
                "name": "steerable",
                "match": ["long task"],
                "steps": [
                    _call("slow_step", '{"label": "task"}', lead="Working on it:", words=20, delay_ms=40),
                    _text("Finished the long task, unsteered."),
                ],
            },
            {"name": "capitals", "match": ["capitals"], "steps": [_text("OK, STEERED INTO CAPITALS.")]},
            {"name": "remember", "match": ["remember"], "steps": [_call("remember", '{"note": "milk"}')]},
            {
                "name": "held",
                "match": ["held tool"],
                "steps": [_call("held_step", '{"label": "held"}'), _text("The held tool is done.")],
            },
            {"name": "held-input", "match": ["held input"], "steps": [_streamed_call(), _text("Input done.")]},
            {
                "name": "broken-input",
                "match": ["broken input"],
                "steps": [
                    {**_streamed_call(), "raise": {"kind": "bad_request", "message": "the model broke"}, "after": 3}
                ],
            },
            {"name": "ask", "match": ["ask me"], "steps": [_call("ask_user", '{"question": "Which colour?"}')]},
        ],
        "fallback": {"steps": [_text("You said: {{last_user_text}}")]},
    },
    model_id="control-book",
)


class RecordingBook:
    """The book, noting each call's user texts (what the model was asked)."""

    provider = BOOK.provider
    model_id = BOOK.model_id
    capabilities = BOOK.capabilities

    async def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        PROMPTS.append(_user_texts(options.prompt))
        async for part in BOOK.stream(options):
            yield part
            if part.type == "tool-input-delta":
                await _input_open()


async def _input_open() -> None:
    """Until `input_held` lets the model go on: polled, not in a thread, so a stop cancels it at once."""
    for _ in range(int(HOLD_LIMIT_SECONDS / 0.02)):
        if _INPUT_OPEN.is_set():
            return
        await asyncio.sleep(0.02)


def _user_texts(prompt: Sequence[ModelMessage]) -> list[str]:
    return [
        " ".join(p.text for p in m.content if isinstance(p, ModelTextPart))
        for m in prompt
        if isinstance(m, UserModelMessage)
    ]


@tool
async def slow_step(label: str) -> str:
    """A step of work that takes a while."""
    STARTED["slow_step"] += 1
    if label == "task":
        await asyncio.to_thread(_TASK_OPEN.wait, HOLD_LIMIT_SECONDS)
    await asyncio.sleep(SLOW_TOOL_SECONDS)
    RUNS["slow_step"] += 1
    return f"done {label}"


@contextmanager
def task_held_until(ready: Callable[[], bool]) -> Generator[None]:
    """Inside: the long task's tool (`slow_step("task")`) waits until `ready()` holds (polled, at most
    `HOLD_LIMIT_SECONDS`), so a message meant for the run's next step boundary is in before it."""
    _TASK_OPEN.clear()
    done = threading.Event()

    def release() -> None:
        deadline = time.monotonic() + HOLD_LIMIT_SECONDS
        while not done.is_set() and time.monotonic() < deadline and not ready():
            time.sleep(0.05)
        _TASK_OPEN.set()

    watcher = threading.Thread(target=release, name="task-hold", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
        _TASK_OPEN.set()


def steer_waiting(server: Running, chat_id: str) -> bool:
    """Whether the conversation has a steering message waiting for its run (read over the API)."""
    with server.client() as http:
        response = http.get(f"/api/conversations/{chat_id}")
    return response.status_code == 200 and any(w["mode"] == "steer" for w in response.json()["waiting"])


@tool
async def held_step(label: str) -> str:
    """A step of work done in a thread, until the test lets it go (`tool_held`)."""
    STARTED["held_step"] += 1
    await asyncio.to_thread(_held_work)
    RETURNED["held_step"] += 1
    return f"done {label}"


def _held_work() -> None:
    _HELD_OPEN.wait(HOLD_LIMIT_SECONDS)
    RUNS["held_step"] += 1  # the thread's work ends, whether or not anyone still waits for it


@contextmanager
def tool_held() -> Generator[threading.Event]:
    """Inside: `held_step` works (in its thread) until the event yielded is set (at the latest on leaving)."""
    _HELD_OPEN.clear()
    try:
        yield _HELD_OPEN
    finally:
        _HELD_OPEN.set()


@contextmanager
def input_held() -> Generator[None]:
    """Inside: a model call that streams a tool call's input stops after its first delta."""
    _INPUT_OPEN.clear()
    try:
        yield
    finally:
        _INPUT_OPEN.set()


@tool(client_side=True)
def ask_user(question: str) -> str:
    """Ask the user; the client answers."""
    return question


@tool(approval="user-approval")
def remember(note: str) -> str:
    """Remember a note (needs approval)."""
    RUNS["remember"] += 1
    return f"remembered {note}"


AGENT = Agent(name="control", model=RecordingBook(), tools=[slow_step, held_step, ask_user, remember])
