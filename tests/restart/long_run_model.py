"""The long task's model as a server: OpenAI's Chat Completions wire, a 32k-token window, a journal, holds.

`LongWire` is the `responder` of a `FakeOpenAI` (tests/support/fake_openai.py) the test runs in its
own process, so it outlives every `stepline dev` it kills. Like `LongTask` (a scripted model, named
as such) it decides from the prompt alone: a request whose system message is the summarizer's gets
a summary naming the last part read ("Parts 1 to k are read"); any other gets a call of `read` for
the next part, or, once all are read, the answer.

Each request is measured at the wire, independently of Stepline's counts: tiktoken over the JSON of
every message and tool definition in the body. Over the window it is refused as OpenAI refuses it
(400 `context_length_exceeded`); a tool call without its result, or a result without its call, is
refused too (400, OpenAI's message). Every request is journalled (`WireRequest`) whatever its fate.

`hold(matches)` arms a hold: the next request `matches` accepts is journalled and then kept waiting,
unanswered, until `release()` (the test kills the server meanwhile, so nobody reads an answer).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from stepline.context.policy import DEFAULT_SUMMARY_INSTRUCTIONS
from stepline.context.tokens import TiktokenCounter
from tests.support.fake_openai import CHAT_PATH, RecordedRequest, Reply, chat_stream, chat_text_chunks, error_reply

__all__ = ["MODEL_ID", "STEPS_VARIABLE", "URL_VARIABLE", "Hold", "LongWire", "WireRequest", "parts_read", "unpaired"]

URL_VARIABLE = "STEPLINE_TEST_LONG_MODEL_URL"
"""The fake's base URL, for the agent module in the `stepline dev` process."""
STEPS_VARIABLE = "STEPLINE_TEST_LONG_STEPS"
"""How many parts the run reads."""
MODEL_ID = "window-32k"

_PART = re.compile(r"part (\d+):")
_SUMMARY = re.compile(r"parts 1 to (\d+) are read", re.IGNORECASE)
Fate = Literal["answered", "refused", "held"]


@dataclass
class WireRequest:
    kind: Literal["summary", "step"]
    tokens: int
    unpaired: list[str]
    parts_read: int
    digest: str
    """Of the request's messages and tools: a redone request is the same request."""
    fate: Fate = "answered"
    answer: str = ""


@dataclass
class Hold:
    matches: Callable[[WireRequest, list[WireRequest]], bool]
    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)


def parts_read(wire: str) -> int:
    """The last part the prompt shows read: by a `read` output, or by a summary."""
    return max([0, *(int(n) for n in _PART.findall(wire)), *(int(n) for n in _SUMMARY.findall(wire))])


def unpaired(messages: list[dict[str, Any]]) -> list[str]:
    """Tool call ids without their result right after their assistant message, and results without a call."""
    problems: list[str] = []
    open_calls: list[str] = []
    for message in messages:
        if message.get("role") == "tool":
            call_id = str(message.get("tool_call_id"))
            if call_id in open_calls:
                open_calls.remove(call_id)
            else:
                problems.append(f"result {call_id} without its call")
            continue
        problems += [f"call {c} without its result" for c in open_calls]
        calls: list[dict[str, Any]] = message.get("tool_calls") or []
        open_calls = [str(c["id"]) for c in calls]
    return problems + [f"call {c} without its result" for c in open_calls]


class LongWire:
    """Answers the long task's Chat Completions requests (see the module's docstring)."""

    def __init__(self, total: int, *, window: int = 32_000) -> None:
        self.total = total
        self.window = window
        self.journal: list[WireRequest] = []
        self._hold: Hold | None = None
        self._lock = threading.Lock()
        self._counter = TiktokenCounter()

    def hold(self, matches: Callable[[WireRequest, list[WireRequest]], bool]) -> Hold:
        """Keep the next request `matches(request, journal before it)` accepts waiting, until released."""
        with self._lock:
            self._hold = Hold(matches)
            return self._hold

    def answered(self, kind: str) -> list[WireRequest]:
        with self._lock:
            return [r for r in self.journal if r.kind == kind and r.fate == "answered"]

    def shape(self) -> str:
        """The journal at a glance: `.` a step, `S` a summary; `h` held, `x` refused (for failure messages)."""
        with self._lock:
            marks = {"answered": "", "held": "h", "refused": "x"}
            return "".join(("S" if r.kind == "summary" else ".") + marks[r.fate] for r in self.journal)

    def finished(self) -> bool:
        """The task's answer was given."""
        with self._lock:
            return bool(self.journal) and self.journal[-1].answer == f"All {self.total} parts are read."

    def __call__(self, request: RecordedRequest) -> Reply:
        assert request.path == CHAT_PATH, request.path
        body: dict[str, Any] = request.body
        messages: list[dict[str, Any]] = body["messages"]
        tools: list[Any] = body.get("tools") or []
        wire = json.dumps(messages)
        first = messages[0] if messages else {}
        summarizing = (
            first.get("role") in ("system", "developer") and first.get("content") == DEFAULT_SUMMARY_INSTRUCTIONS
        )
        entry = WireRequest(
            kind="summary" if summarizing else "step",
            tokens=self._tokens(messages, tools),
            unpaired=unpaired(messages),
            parts_read=parts_read(wire),
            digest=hashlib.sha256(json.dumps([messages, tools], sort_keys=True).encode()).hexdigest(),
        )
        with self._lock:
            hold = self._hold if self._hold is not None and self._hold.matches(entry, list(self.journal)) else None
            if hold is not None:
                self._hold, entry.fate = None, "held"
            self.journal.append(entry)
        if entry.tokens > self.window or entry.unpaired:
            entry.fate = "refused"
            return self._refusal(entry)
        if hold is not None:
            hold.reached.set()
            hold.released.wait()
            return error_reply(503, "held until the client went away")
        return self._answer(entry)

    def release(self, hold: Hold) -> None:
        hold.released.set()

    def _tokens(self, messages: list[dict[str, Any]], tools: list[Any]) -> int:
        return sum(self._counter.count(json.dumps(m)) + 4 for m in messages) + sum(
            self._counter.count(json.dumps(t)) for t in tools
        )

    def _refusal(self, entry: WireRequest) -> Reply:
        if entry.tokens > self.window:
            return error_reply(
                400,
                f"This model's maximum context length is {self.window} tokens. However, your messages "
                f"resulted in {entry.tokens} tokens. Please reduce the length of the messages.",
                code="context_length_exceeded",
                error_type="invalid_request_error",
            )
        return error_reply(
            400,
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id': {entry.unpaired}",
            error_type="invalid_request_error",
        )

    def _answer(self, entry: WireRequest) -> Reply:
        done = entry.parts_read
        if entry.kind == "summary":
            entry.answer = f"Parts 1 to {done} are read; each part was a list of words. The rest remain."
        elif done >= self.total:
            entry.answer = f"All {self.total} parts are read."
        else:
            entry.answer = f"read {done + 1}"
            return chat_stream(_call_chunks(f"call_{done + 1}", "read", json.dumps({"part": done + 1})))
        return chat_stream(chat_text_chunks(entry.answer, model=MODEL_ID))


def _call_chunks(call_id: str, name: str, arguments: str) -> list[dict[str, Any]]:
    base = {"id": f"chatcmpl-{call_id}", "object": "chat.completion.chunk", "created": 1_700_000_000}
    base["model"] = MODEL_ID

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}], "usage": None}

    start = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    return [
        chunk({"role": "assistant", "content": None, "tool_calls": [start]}),
        chunk({}, "tool_calls"),
        {**base, "choices": [], "usage": usage},
    ]
