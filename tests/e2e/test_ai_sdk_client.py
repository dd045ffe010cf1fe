"""The real AI SDK client (`ai@7.0.173`'s `AbstractChat` + `DefaultChatTransport`) against a Stepline server.

One dev server (the real app over DynamoDB, S3 and Step Functions on moto) serves the module; each
scenario is one chat, played by `tests/node/chat_e2e.mjs` in a Node process. The tests compare what
the client ends up with to what the server stored (`GET /api/conversations/{id}`): `id`, `role`,
`parts` and `metadata` of every message, exactly, and whether each has a `metadata` key at all.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from stepline.api.identity import DEFAULT_LOCAL_USER
from stepline.llm.registry import DEMO_BOOK
from stepline.store import workspace
from stepline.store.errors import NotFound
from tests.e2e.counting_tools import RUNS
from tests.support.node_script import run_node_script
from tests.support.sdk_oracle import SdkError, SdkOracle
from tests.support.server import Running, config, running, write_book

USER = DEFAULT_LOCAL_USER
NOTE = "notes/hello.md"

# -- the model: the demo book, and two slow scripts for the dropped connection and the abort -----------


def _finish(reason: str) -> dict[str, Any]:
    usage = {"inputTokens": {"total": 10, "noCache": 10}, "outputTokens": {"total": 5}}
    return {"type": "finish", "finishReason": {"unified": reason, "raw": reason}, "usage": usage}


def _text_step(part_id: str, deltas: list[str], *tail: dict[str, Any], end: str = "stop") -> dict[str, Any]:
    parts = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": part_id},
        *({"type": "text-delta", "id": part_id, "delta": d} for d in deltas),
        {"type": "text-end", "id": part_id},
        *tail,
        _finish(end),
    ]
    return {"delayMs": 30, "parts": parts}


RAMBLE_WORDS = [f"w{i} " for i in range(16)]
RAMBLE = {
    "name": "ramble",
    "match": ["ramble"],
    "steps": [
        _text_step(
            "t1",
            RAMBLE_WORDS,
            {"type": "tool-call", "toolCallId": "call-list", "toolName": "list_files", "input": "{}"},
            end="tool-calls",
        ),
        _text_step("t2", [w.upper() for w in RAMBLE_WORDS]),
    ],
}
"""Two paced steps with a server-side tool call between them: long enough to drop the connection in."""

DAWDLE_WORDS = [f"d{i} " for i in range(60)]
DAWDLE = {"name": "dawdle", "match": ["dawdle"], "steps": [_text_step("t1", DAWDLE_WORDS)]}
"""One step of ~2 s: still streaming when the worker notices an abort (it polls every second)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    demo = json.loads(DEMO_BOOK.read_text(encoding="utf-8"))
    book = tmp_path_factory.mktemp("e2e") / "book.json"
    model = write_book(book, [RAMBLE, DAWDLE, *demo["scripts"]], fallback=demo["fallback"]["steps"])
    with running(config(model, STEPLINE_TOOLS="tests.e2e.counting_tools")) as started:
        yield started


# -- driving the client ------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What the client saw (the Node script's report) and what the server stored, for one chat."""

    chat_id: str
    client: dict[str, Any]
    stored: dict[str, Any]
    warnings: list[str] = field(default_factory=list[str])
    """What the server logged to `stepline.store` meanwhile (where the scenario collects it)."""
    events: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """The chunks of the run's event log (where the scenario reads it)."""

    @property
    def assistants(self) -> list[dict[str, Any]]:
        return [m for m in self.client["messages"] if m["role"] == "assistant"]

    @property
    def stored_assistants(self) -> list[dict[str, Any]]:
        return [m for m in self.stored["messages"] if m["role"] == "assistant"]


def play(
    server: Running, chat_id: str, *steps: dict[str, Any], auto: str | None = None, latency_ms: int = 0
) -> Outcome:
    """Play `steps` with the SDK client (auto: its `sendAutomaticallyWhen`), then read the stored chat."""
    scenario = {
        "base": server.url,
        "chatId": chat_id,
        "sendAutomaticallyWhen": auto,
        "latencyMs": latency_ms,
        "steps": list(steps),
    }
    client = run_node_script("chat_e2e.mjs", scenario)
    assert [s for s in client["steps"] if "failed" in s] == [], client["steps"]
    return Outcome(chat_id, client, stored_chat(server, chat_id))


def stored_chat(server: Running, chat_id: str) -> dict[str, Any]:
    with server.client() as http:
        response = http.get(f"/api/conversations/{chat_id}")
    if response.status_code == 404:
        return {"messages": [], "status": None}
    assert response.status_code == 200, response.text
    return response.json()


def comparable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`id`, `role`, `parts` and (when present) `metadata` of each message."""
    return [{k: m[k] for k in ("id", "role", "parts", "metadata") if k in m} for m in messages]


def tool_part(message: dict[str, Any], tool: str) -> dict[str, Any]:
    (found,) = [p for p in message["parts"] if p["type"] == f"tool-{tool}"]
    return found


def texts(message: dict[str, Any]) -> list[str]:
    return [p["text"] for p in message["parts"] if p["type"] == "text"]


def sdk_rejects(sdk: SdkOracle, messages: list[dict[str, Any]]) -> str | None:
    """The SDK's `validateUIMessages` error for the messages, None when it accepts them."""
    plain = [{k: v for k, v in m.items() if v is not None} for m in comparable(messages)]
    try:
        sdk.call("validate", messages=plain)
    except SdkError as error:
        return str(error)[:600]
    return None


def note_in_workspace(server: Running, chat_id: str) -> bytes | None:
    blobs = server.server.backend.services.blobs
    assert blobs is not None
    try:
        return workspace.read_file(blobs, USER, chat_id, NOTE)
    except NotFound:
        return None


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


# -- one chat per scenario (module-scoped where two tests read the same chat) --------------------------


@pytest.fixture(scope="module")
def approved(server: Running) -> Outcome:
    # The second turn rebuilds the model's context from the stored first turn: its warnings are kept.
    collect = _Collect()
    logger = logging.getLogger("stepline.store")
    logger.addHandler(collect)
    try:
        outcome = play(
            server,
            "e2e-approved",
            {"send": "Write a note"},
            {"approve": True, "reason": "go ahead"},
            {"send": "List my files"},
            auto="approvals",
        )
    finally:
        logger.removeHandler(collect)
    outcome.warnings = collect.lines
    return outcome


@pytest.fixture(scope="module")
def denied(server: Running) -> Outcome:
    steps = ({"send": "Write a note"}, {"approve": False, "reason": "not now"})
    return play(server, "e2e-denied", *steps, auto="approvals")


@pytest.fixture(scope="module")
def webhook(server: Running) -> Outcome:
    return play(
        server, "e2e-webhook", {"send": "Write a note"}, {"webhookDuringResume": {"approved": True, "reason": "fine"}}
    )


@pytest.fixture(scope="module")
def aborted(server: Running) -> Outcome:
    outcome = play(server, "e2e-abort", {"abortAfterChunks": 5, "send": "dawdle along"})
    # The worker notices the abort within about a second; wait until its log is quiet, then read again.
    store, clock = server.server.backend.services.store, server.server.backend.services.clock
    run_id = outcome.assistants[0]["metadata"]["runId"]
    seen, quiet_since, deadline = -1, time.monotonic(), time.monotonic() + 10
    while time.monotonic() - quiet_since < 0.6 and time.monotonic() < deadline:
        last = store.get_run(USER, run_id).last_event_seq
        if last != seen:
            seen, quiet_since = last, time.monotonic()
        time.sleep(0.05)
    outcome.stored = stored_chat(server, outcome.chat_id)
    outcome.events = [c for e in store.events_after(USER, run_id, 0, now=clock()) for c in e.chunks]
    return outcome


# -- the scenarios ---------------------------------------------------------------------------------------

STOP = {"isAbort": False, "isDisconnect": False, "isError": False, "finishReason": "stop"}
NO_FINISH = {"isAbort": False, "isDisconnect": False, "isError": False, "finishReason": None}
"""onFinish for a stream that ends without a `finish` chunk (at an approval, a question, or after `abort`)."""


def finishes(outcome: Outcome) -> list[dict[str, Any]]:
    """The client's onFinish calls, without the message id (`ids` has them)."""
    return [{k: v for k, v in f.items() if k != "messageId"} for f in outcome.client["finishes"]]


def ids(outcome: Outcome) -> list[str]:
    return [f["messageId"] for f in outcome.client["finishes"]]


def requests(outcome: Outcome) -> list[tuple[str, str, int]]:
    return [(r["method"], r["path"], r["status"]) for r in outcome.client["requests"]]


CHAT = ("POST", "/api/chat", 200)


def test_a_text_reply_reaches_the_client_as_stored(server: Running) -> None:
    outcome = play(server, "e2e-text", {"send": "Hello there"})
    client = outcome.client
    assert client["status"] == "ready" and client["errors"] == []
    assert client["statuses"] == ["submitted", "streaming", "ready"]
    assert requests(outcome) == [CHAT]
    (reply,) = outcome.assistants
    assert (ids(outcome), finishes(outcome)) == ([reply["id"]], [STOP])
    assert [p["type"] for p in reply["parts"]] == ["step-start", "reasoning", "text"]
    assert texts(reply)[0].startswith("This is Stepline's scripted demo")
    assert reply["metadata"]["runId"].startswith("run-") and reply["metadata"]["finishReason"] == "stop"
    assert comparable(client["messages"]) == comparable(outcome.stored["messages"])
    assert [m["status"] for m in outcome.stored["messages"]] == ["completed", "completed"]
    assert (outcome.stored["status"], outcome.stored["activeRunId"]) == ("idle", None)


def test_regenerate_replaces_the_answer_in_the_client_and_the_store(server: Running) -> None:
    outcome = play(server, "e2e-regenerate", {"send": "Hello there"}, {"regenerate": True})
    client = outcome.client
    assert client["status"] == "ready" and client["errors"] == []
    assert [(r["method"], r["status"]) for r in client["requests"]] == [("POST", 200), ("POST", 200)]
    (reply,) = outcome.assistants
    assert comparable(client["messages"]) == comparable(outcome.stored["messages"])
    assert [m["role"] for m in outcome.stored["messages"]] == ["user", "assistant"]
    assert outcome.stored["messages"][1]["id"] == reply["id"]
    first, second = (f["messageId"] for f in client["finishes"])
    assert first != second == reply["id"], "a new answer, not the old one again"


def test_a_tool_without_approval_runs_on_the_server(server: Running) -> None:
    outcome = play(server, "e2e-list", {"send": "List my files"})
    (reply,) = outcome.assistants
    part = tool_part(reply, "list_files")
    assert (part["state"], part["input"], part["output"]) == ("output-available", {}, {"folder": "", "files": []})
    assert [p["type"] for p in reply["parts"]] == ["step-start", "reasoning", "tool-list_files", "step-start", "text"]
    assert (requests(outcome), finishes(outcome)) == ([CHAT], [STOP])
    assert comparable(outcome.client["messages"]) == comparable(outcome.stored["messages"])
    assert RUNS[("e2e-list", "list_files")] == 1


def test_an_approved_tool_runs_once_and_the_reply_goes_on_in_the_same_message(
    server: Running, approved: Outcome
) -> None:
    client = approved.client
    assert [m["role"] for m in client["messages"]] == ["user", "assistant", "user", "assistant"]
    first, second = approved.assistants
    # The send stops at the approval; the automatic send carries the decision and its stream
    # continues the same message to the end; then the second turn.
    assert requests(approved) == [CHAT, CHAT, CHAT]
    assert ids(approved) == [first["id"], first["id"], second["id"]]
    assert finishes(approved) == [NO_FINISH, STOP, STOP]
    assert client["errors"] == [] and client["status"] == "ready"
    written = tool_part(first, "write_file")
    assert written["state"] == "output-available"
    assert written["approval"] == {"id": written["approval"]["id"], "approved": True, "reason": "go ahead"}
    assert written["output"] == {"path": NOTE, "bytes": len(written["input"]["content"].encode())}
    assert texts(first) == [
        "Done — see the tool result above. If you approved it, notes/hello.md is now in this conversation's "
        "workspace: try “List my files” or “Save the note as an artifact”."
    ]
    # The file is really there: the second turn lists it, and the workspace holds what was approved.
    assert tool_part(second, "list_files")["output"] == {"folder": "", "files": [NOTE]}
    assert note_in_workspace(server, "e2e-approved") == written["input"]["content"].encode()
    assert RUNS[("e2e-approved", "write_file")] == 1
    assert comparable(client["messages"]) == comparable(approved.stored["messages"])
    assert [m["status"] for m in approved.stored["messages"]] == ["completed"] * 4
    # The second turn's context was rebuilt from the stored first turn, tool call and result included.
    assert [line for line in approved.warnings if "falls back to its text" in line] == []


def test_a_denied_tool_never_runs_and_the_reply_goes_on_in_the_same_message(server: Running, denied: Outcome) -> None:
    (reply,) = denied.assistants
    assert [m["role"] for m in denied.client["messages"]] == ["user", "assistant"]
    assert requests(denied) == [CHAT, CHAT]
    assert (ids(denied), finishes(denied)) == ([reply["id"]] * 2, [NO_FINISH, STOP])
    part = tool_part(reply, "write_file")
    assert part["state"] == "output-denied"
    assert part["approval"] == {"id": part["approval"]["id"], "approved": False, "reason": "not now"}
    assert "output" not in part
    assert [p["type"] for p in reply["parts"]] == ["step-start", "reasoning", "tool-write_file", "step-start", "text"]
    assert RUNS[("e2e-denied", "write_file")] == 0
    assert note_in_workspace(server, "e2e-denied") is None
    assert comparable(denied.client["messages"]) == comparable(denied.stored["messages"])


def test_a_webhook_approval_reaches_a_client_waiting_on_the_resume_stream(server: Running, webhook: Outcome) -> None:
    (reply,) = webhook.assistants
    assert requests(webhook) == [CHAT, ("GET", "/api/chat/e2e-webhook/stream", 200)]
    (decision,) = webhook.client["webhooks"]
    assert decision["status"] == 200 and decision["body"]["status"] == "approved"
    assert decision["statusDuringResume"] in ("submitted", "streaming")  # the client was still on the stream
    # The resume stream stayed open through the wait and carried the rest of the run.
    assert (ids(webhook), finishes(webhook)) == ([reply["id"]] * 2, [NO_FINISH, STOP])
    part = tool_part(reply, "write_file")
    assert part["state"] == "output-available" and part["output"]["path"] == NOTE
    # The decision reached this client through the stream (it never called addToolApprovalResponse).
    assert part["approval"] == {"id": part["approval"]["id"], "approved": True, "reason": "fine"}
    assert RUNS[("e2e-webhook", "write_file")] == 1
    assert note_in_workspace(server, "e2e-webhook") is not None
    assert comparable(webhook.client["messages"]) == comparable(webhook.stored["messages"])


@pytest.mark.parametrize(
    ("chat_id", "decide", "auto"),
    [
        ("e2e-bare-approval", {"approve": True}, "approvals"),
        ("e2e-bare-webhook", {"webhookDuringResume": {"approved": True}}, None),
    ],
)
def test_an_approval_without_a_reason_reaches_the_client(
    server: Running, chat_id: str, decide: dict[str, Any], auto: str | None
) -> None:
    # Regression: the decision's chunk once said `"reason": null`, which the SDK's chunk schema
    # (reason: optional string) rejects: the client's stream failed with AI_TypeValidationError.
    outcome = play(server, chat_id, {"send": "Write a note"}, decide, auto=auto)
    assert outcome.client["errors"] == [] and outcome.client["status"] == "ready"
    part = tool_part(outcome.assistants[0], "write_file")
    assert (part["state"], part["approval"]) == ("output-available", {"id": part["approval"]["id"], "approved": True})
    assert comparable(outcome.client["messages"]) == comparable(outcome.stored["messages"])


@pytest.mark.parametrize("scenario", ["approved", "denied", "webhook"])
def test_the_stored_messages_are_valid_ui_messages_for_the_sdk(
    request: pytest.FixtureRequest, sdk: SdkOracle, scenario: str
) -> None:
    outcome: Outcome = request.getfixturevalue(scenario)
    assert sdk_rejects(sdk, outcome.stored["messages"]) is None


def test_a_question_answered_with_add_tool_output_goes_on_in_the_same_message(server: Running) -> None:
    outcome = play(server, "e2e-ask", {"send": "Ask me a question"}, {"answer": "Meeting notes"}, auto="toolCalls")
    (reply,) = outcome.assistants
    assert outcome.client["errors"] == [] and outcome.client["status"] == "ready"
    assert requests(outcome) == [CHAT, CHAT]
    assert (ids(outcome), finishes(outcome)) == ([reply["id"]] * 2, [NO_FINISH, STOP])
    part = tool_part(reply, "ask_user_question")
    assert (part["state"], part["output"]) == ("output-available", "Meeting notes")
    assert part["input"]["question"] == "Which kind of note should I write next?"
    assert [p["type"] for p in reply["parts"]] == [
        "step-start",
        "reasoning",
        "tool-ask_user_question",
        "step-start",
        "text",
    ]
    assert texts(reply)[0].startswith("Thanks — your answer is in the tool result above.")
    assert comparable(outcome.client["messages"]) == comparable(outcome.stored["messages"])
    assert [m["status"] for m in outcome.stored["messages"]] == ["completed", "completed"]


def _cold_start(monkeypatch: pytest.MonkeyPatch, server: Running, seconds: float) -> None:
    """The worker marks a run running `seconds` late, as a worker Lambda does after a cold start."""
    store = server.server.backend.services.store
    mark_running = store.mark_running

    def late(*args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return mark_running(*args, **kwargs)

    monkeypatch.setattr(store, "mark_running", late)


# Regression, the next two: a continuation's run still reads waiting_approval/waiting_user until the
# worker's next invocation calls mark_running. The tail once took that for a new wait and sent [DONE]
# right after `start`; the stock client's sendAutomaticallyWhen was still true, so it sent the same
# answers again, in a tight loop (a dozen POSTs with a worker 0.3 s late), and for a question a repeat
# that came after mark_running got 400 ("carries no approval response or tool output"): the client
# ended in `error` with the reply cut after the tool part.


def test_a_continuation_streams_the_rest_of_the_run_even_before_the_worker_starts(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cold_start(monkeypatch, server, 0.3)
    steps = ({"send": "Write a note"}, {"approve": True, "reason": "go ahead"})
    outcome = play(server, "e2e-cold-approval", *steps, auto="approvals")
    assert requests(outcome) == [CHAT, CHAT]
    assert finishes(outcome) == [NO_FINISH, STOP]
    assert comparable(outcome.client["messages"]) == comparable(outcome.stored["messages"])


def test_an_answer_from_a_slow_client_gets_the_rest_of_the_reply(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cold_start(monkeypatch, server, 0.2)
    steps = ({"send": "Ask me a question"}, {"answer": "A short poem"})
    outcome = play(server, "e2e-slow-answer", *steps, auto="toolCalls", latency_ms=600)
    assert outcome.client["errors"] == [] and outcome.client["status"] == "ready"
    assert requests(outcome) == [CHAT, CHAT]
    assert comparable(outcome.client["messages"]) == comparable(outcome.stored["messages"])


def test_resume_after_a_dropped_connection_loses_and_repeats_nothing(server: Running) -> None:
    outcome = play(server, "e2e-drop", {"dropAfterChunks": 6, "send": "ramble on"}, {"resume": True})
    client = outcome.client
    (reply,) = outcome.assistants
    # The drop is a disconnect to the SDK (a TypeError from the body), then the resume replays from `start`.
    assert client["errors"] == [{"name": "TypeError", "message": "network error"}]
    assert [(f["isDisconnect"], f["isError"], f["finishReason"]) for f in client["finishes"]] == [
        (True, True, None),
        (False, False, "stop"),
    ]
    assert client["statuses"] == ["submitted", "streaming", "error", "submitted", "streaming", "ready"]
    assert requests(outcome) == [CHAT, ("GET", "/api/chat/e2e-drop/stream", 200)]
    assert reply["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "".join(RAMBLE_WORDS), "state": "done"},
        {
            "type": "tool-list_files",
            "toolCallId": "call-list",
            "state": "output-available",
            "input": {},
            "output": {"folder": "", "files": []},
        },
        {"type": "step-start"},
        {"type": "text", "text": "".join(w.upper() for w in RAMBLE_WORDS), "state": "done"},
    ]
    assert comparable(client["messages"]) == comparable(outcome.stored["messages"])
    assert RUNS[("e2e-drop", "list_files")] == 1


def test_resume_without_an_active_run_is_204_and_changes_nothing(server: Running) -> None:
    outcome = play(server, "e2e-nothing", {"resume": True})
    client = outcome.client
    assert requests(outcome) == [("GET", "/api/chat/e2e-nothing/stream", 204)]
    assert client["status"] == "ready" and client["statuses"] == []
    assert client["messages"] == [] and client["finishes"] == [] and client["errors"] == []
    assert outcome.stored["messages"] == []


def test_an_abort_ends_the_run_and_the_client_stream(server: Running, aborted: Outcome) -> None:
    client = aborted.client
    (reply,) = aborted.assistants
    run_id = reply["metadata"]["runId"]
    (abort,) = client["aborts"]
    assert (abort["status"], abort["body"]) == (200, {"runId": run_id, "status": "aborted"})
    # The client's stream ended (the server closed it after the `abort` chunk): ready, no error.
    assert client["status"] == "ready" and client["errors"] == []
    assert requests(aborted) == [CHAT]
    assert (ids(aborted), finishes(aborted)) == ([reply["id"]], [NO_FINISH])
    assert reply["parts"][0] == {"type": "step-start"}
    assert "".join(DAWDLE_WORDS).startswith(texts(reply)[0])
    assert reply["metadata"]["abort"]["reason"] == "user_cancelled"
    # Stored: the run and its message aborted, the conversation free for the next turn.
    assert server.server.backend.services.store.get_run(USER, run_id).status == "aborted"
    assert (aborted.stored["status"], aborted.stored["activeRunId"]) == ("idle", None)
    assert [(m["id"], m["status"]) for m in aborted.stored_assistants] == [(reply["id"], "aborted")]
    # Regression: the stored message once lacked what the step had streamed before the abort (parts
    # []), and the client lacked the abort's metadata (completedAt, abort), which was not streamed.
    assert comparable(client["messages"]) == comparable(aborted.stored["messages"])


def test_nothing_is_logged_after_the_abort_chunk(aborted: Outcome) -> None:
    # Regression: the step still streaming once went on appending to the ended run's log until the
    # worker noticed the abort (it polls every second).
    kinds = [c["type"] for c in aborted.events]
    assert kinds[-2:] == ["message-metadata", "abort"], kinds[kinds.index("abort") - 1 :]
