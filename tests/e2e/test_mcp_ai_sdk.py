"""An agent calling the tools of a live MCP server through the durable path, seen by the real AI SDK client.

The dev server (the real app; DynamoDB, S3 and the Step Functions state machine on moto; the worker
functions in process) serves `STEPLINE_TOOLS=stepline.tools.mcp` with two MCP servers on loopback
(`tests.support.mcp_server`, the official SDK's `MCPServer` over Streamable HTTP): `calc`, up the
whole time, and `flaky`, listed and then stopped. `tests/node/chat_e2e.mjs` plays each chat with
`ai@7`'s `AbstractChat`; the tests compare what the client holds with what the server stored, and
read the store's tool-call records (each MCP call claimed before it ran) and the server's own count
of how often the non-idempotent `delete_row` really ran.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepline.api.identity import DEFAULT_LOCAL_USER
from tests.e2e.test_ai_sdk_client import STOP, Outcome, comparable, finishes, play, texts, tool_part
from tests.support.mcp import http_mcp
from tests.support.server import Running, config, running, write_book

USER = DEFAULT_LOCAL_USER


def _finish(reason: str) -> dict[str, Any]:
    usage = {"inputTokens": {"total": 10, "noCache": 10}, "outputTokens": {"total": 5}}
    return {"type": "finish", "finishReason": {"unified": reason, "raw": reason}, "usage": usage}


def _tool_then_text(name: str, match: str, tool: str, arguments: dict[str, Any], reply: str) -> dict[str, Any]:
    call = {"type": "tool-call", "toolCallId": f"call-{name}", "toolName": tool, "input": json.dumps(arguments)}
    answer = [
        {"type": "text-start", "id": "t1"},
        {"type": "text-delta", "id": "t1", "delta": reply},
        {"type": "text-end", "id": "t1"},
    ]
    return {
        "name": name,
        "match": [match],
        "steps": [
            {"parts": [{"type": "stream-start", "warnings": []}, call, _finish("tool-calls")]},
            {"parts": [{"type": "stream-start", "warnings": []}, *answer, _finish("stop")]},
        ],
    }


SCRIPTS = [
    _tool_then_text("add", "add two", "calc_add", {"a": 2, "b": 3}, "2 + 3 = 5."),
    _tool_then_text("delete", "delete row", "calc_delete_row", {"row": 7}, "Done."),
    _tool_then_text("flaky", "ask the flaky", "flaky_echo", {"text": "hello"}, "The flaky server is down."),
]


@pytest.fixture(scope="module")
def count_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp") / "delete_row.count"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, count_file: Path) -> Iterator[Running]:
    folder = tmp_path_factory.mktemp("mcp-e2e")
    model = write_book(folder / "book.json", SCRIPTS)
    with http_mcp(count_file) as calc, http_mcp() as flaky, pytest.MonkeyPatch.context() as patch:
        servers = {
            "servers": [
                {
                    "type": "http",
                    "name": "calc",
                    "url": calc.url,
                    "prefix": "calc",
                    "allowedTools": ["add", "delete_row"],
                    "approval": {"delete_row": "user-approval"},
                },
                {"type": "http", "name": "flaky", "url": flaky.url, "prefix": "flaky", "allowedTools": ["echo"]},
            ]
        }
        patch.setenv("STEPLINE_MCP_SERVERS", json.dumps(servers))
        with running(config(model, STEPLINE_TOOLS="stepline.tools.mcp")) as started:
            listed = [
                t.name for t in started.server.backend.services.agent_set.default.tools
            ]  # the first step would list them
            assert listed == ["calc_add", "calc_delete_row", "flaky_echo"]
            flaky.stop()  # listed while up; down for every call from here on
            yield started


def tool_calls(server: Running, outcome: Outcome) -> list[tuple[str, str]]:
    """(tool name, status) of the run's durable tool-call records."""
    store = server.server.backend.services.store
    run_id = outcome.assistants[0]["metadata"]["runId"]
    return [(c.tool_name, c.status) for c in store.list_tool_calls(USER, run_id)]


def runs_of_delete_row(count_file: Path) -> int:
    return int(count_file.read_text()) if count_file.exists() else 0


def test_an_mcp_tool_runs_through_the_durable_path_to_the_sdk_client(server: Running) -> None:
    outcome = play(server, "mcp-add", {"send": "Please add two numbers"})
    (reply,) = outcome.assistants
    part = tool_part(reply, "calc_add")
    assert (part["state"], part["input"], part["output"]) == ("output-available", {"a": 2, "b": 3}, {"sum": 5})
    assert texts(reply) == ["2 + 3 = 5."] and finishes(outcome) == [STOP]
    assert outcome.client["errors"] == []
    assert comparable(outcome.client["messages"]) == comparable(outcome.stored["messages"])
    assert tool_calls(server, outcome) == [("calc_add", "success")], "claimed, then its outcome recorded"


def test_an_mcp_tool_that_needs_approval_runs_once_after_it(server: Running, count_file: Path) -> None:
    before = runs_of_delete_row(count_file)
    outcome = play(server, "mcp-approve", {"send": "Delete row 7"}, {"approve": True}, auto="approvals")
    (reply,) = outcome.assistants
    part = tool_part(reply, "calc_delete_row")
    assert part["state"] == "output-available" and part["approval"]["approved"] is True
    assert part["output"] == {"result": "row 7 deleted"}
    assert runs_of_delete_row(count_file) == before + 1, "the MCP server ran it exactly once"
    assert [r["status"] for r in outcome.client["requests"]] == [200, 200]
    assert comparable(outcome.client["messages"]) == comparable(outcome.stored["messages"])
    assert tool_calls(server, outcome) == [("calc_delete_row", "success")]


def test_a_denied_mcp_tool_never_reaches_the_server(server: Running, count_file: Path) -> None:
    before = runs_of_delete_row(count_file)
    outcome = play(server, "mcp-deny", {"send": "Delete row 7"}, {"approve": False, "reason": "no"}, auto="approvals")
    part = tool_part(outcome.assistants[0], "calc_delete_row")
    assert part["state"] == "output-denied" and "output" not in part
    assert runs_of_delete_row(count_file) == before
    assert comparable(outcome.client["messages"]) == comparable(outcome.stored["messages"])


def test_a_server_that_is_down_is_a_tool_error_the_model_reads_and_the_run_completes(server: Running) -> None:
    outcome = play(server, "mcp-down", {"send": "Please ask the flaky server"})
    (reply,) = outcome.assistants
    part = tool_part(reply, "flaky_echo")
    assert part["state"] == "output-error"
    assert part["errorText"] == (
        "McpToolError: MCP server flaky is unreachable or dropped the connection "
        "(ConnectError: All connection attempts failed)"
    )
    assert texts(reply) == ["The flaky server is down."] and finishes(outcome) == [STOP]
    assert outcome.stored["status"] == "idle" and [m["status"] for m in outcome.stored["messages"]] == [
        "completed",
        "completed",
    ]
    assert comparable(outcome.client["messages"]) == comparable(outcome.stored["messages"])
    assert tool_calls(server, outcome) == [("flaky_echo", "error")]
