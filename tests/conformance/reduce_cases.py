"""Reducer cases: chunk streams (wire JSON) that Stepline and the real `ai` package both reduce.

Each case is `(name, chunks, start_message)`. They cover every chunk type, every tool state,
approvals, errors, aborts, metadata merging, data parts, multi-step messages, continuation and
each protocol violation the SDK reports.
"""

from __future__ import annotations

from typing import Any

Chunk = dict[str, Any]


def text(id_: str, *deltas: str, **end: Any) -> list[Chunk]:
    return [
        {"type": "text-start", "id": id_},
        *({"type": "text-delta", "id": id_, "delta": d} for d in deltas),
        {"type": "text-end", "id": id_, **end},
    ]


def reasoning(id_: str, *deltas: str, metadata: dict[str, Any] | None = None) -> list[Chunk]:
    end: Chunk = {"type": "reasoning-end", "id": id_}
    if metadata is not None:
        end["providerMetadata"] = metadata
    return [
        {"type": "reasoning-start", "id": id_},
        *({"type": "reasoning-delta", "id": id_, "delta": d} for d in deltas),
        end,
    ]


def tool_call(call_id: str, name: str, *fragments: str, dynamic: bool | None = None, **extra: Any) -> list[Chunk]:
    start: Chunk = {"type": "tool-input-start", "toolCallId": call_id, "toolName": name, **extra}
    if dynamic is not None:
        start["dynamic"] = dynamic
    available: Chunk = {
        "type": "tool-input-available",
        "toolCallId": call_id,
        "toolName": name,
        "input": __import__("json").loads("".join(fragments)),
    }
    if dynamic is not None:
        available["dynamic"] = dynamic
    return [
        start,
        *({"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": f} for f in fragments),
        available,
    ]


START: Chunk = {"type": "start", "messageId": "msg-1"}
STEP: Chunk = {"type": "start-step"}
END_STEP: Chunk = {"type": "finish-step"}
FINISH: Chunk = {"type": "finish", "finishReason": "stop"}

ASSISTANT_WAITING: dict[str, Any] = {
    "id": "msg-1",
    "role": "assistant",
    "parts": [
        {"type": "step-start"},
        {
            "type": "tool-deleteFile",
            "toolCallId": "call-1",
            "state": "approval-responded",
            "input": {"path": "/tmp/x"},
            "approval": {"id": "ap-1", "approved": True},
        },
    ],
}

_URL_SOURCE: Chunk = {"type": "source", "sourceType": "url", "id": "s1", "url": "https://a.example/"}
LOOSE_CITATIONS: list[tuple[str, Any]] = [
    ("a negative index", [{"source": _URL_SOURCE, "startIndex": -1, "endIndex": 2.5}]),
    ("no source", [{"citedText": "q"}]),
    ("unknown keys and a source of another kind", [{"source": {"sourceType": "book", "isbn": "x"}, "page": 3}]),
    ("null cited text", [{"source": _URL_SOURCE, "citedText": None}]),
    ("not objects", ["a", 1, None]),
    ("not a list", {"source": _URL_SOURCE}),
    ("null (left out)", None),
]
"""`readUIMessageStream` copies any non-null `citations` onto the part without looking inside (the
transport's SSE parser checks them against `citationSchema` first, so these are reducer-only cases)."""

CASES: list[tuple[str, list[Chunk], dict[str, Any] | None]] = [
    ("plain text", [START, STEP, *text("t1", "Hello", " world"), END_STEP, FINISH], None),
    ("text without message id", [{"type": "start"}, STEP, *text("t1", "Hi"), END_STEP, FINISH], None),
    ("empty stream", [], None),
    ("only start without id", [{"type": "start"}], None),
    ("only lifecycle chunks", [START, STEP, END_STEP, FINISH], None),
    (
        "text with provider metadata on start, delta and end",
        [
            START,
            {"type": "text-start", "id": "t", "providerMetadata": {"p": {"a": 1}}},
            {"type": "text-delta", "id": "t", "delta": "x", "providerMetadata": {"p": {"b": 2}}},
            {"type": "text-end", "id": "t"},
        ],
        None,
    ),
    (
        "text left open at end of stream",
        [START, STEP, {"type": "text-start", "id": "t"}, {"type": "text-delta", "id": "t", "delta": "par"}],
        None,
    ),
    (
        "two interleaved text parts",
        [
            START,
            {"type": "text-start", "id": "a"},
            {"type": "text-start", "id": "b"},
            {"type": "text-delta", "id": "b", "delta": "B"},
            {"type": "text-delta", "id": "a", "delta": "A"},
            {"type": "text-end", "id": "a"},
            {"type": "text-end", "id": "b"},
        ],
        None,
    ),
    (
        "reasoning then text",
        [
            START,
            STEP,
            *reasoning("r1", "think", "ing", metadata={"anthropic": {"signature": "sig"}}),
            *text("t1", "answer"),
            END_STEP,
            FINISH,
        ],
        None,
    ),
    (
        "text-end with citations",
        [
            START,
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": "q"},
            {
                "type": "text-end",
                "id": "t",
                "citations": [
                    {
                        "citedText": "q",
                        "startIndex": 0,
                        "endIndex": 1,
                        "source": {"type": "source", "sourceType": "url", "id": "s1", "url": "https://a.example/"},
                    }
                ],
            },
        ],
        None,
    ),
    (
        "violation: text-delta before start",
        [START, {"type": "text-delta", "id": "x", "delta": "a"}, *text("t", "after")],
        None,
    ),
    ("violation: text-end for unknown id", [START, *text("t", "a"), {"type": "text-end", "id": "t"}], None),
    ("violation: reasoning-delta before start", [START, {"type": "reasoning-delta", "id": "r", "delta": "a"}], None),
    ("violation: reasoning-end unknown", [START, {"type": "reasoning-end", "id": "r"}], None),
    (
        "tool call streamed then output",
        [
            START,
            STEP,
            *tool_call("c1", "weather", '{"cit', 'y":"Paris"}'),
            {"type": "tool-output-available", "toolCallId": "c1", "output": {"temp": 20}},
            END_STEP,
            STEP,
            *text("t", "Sunny"),
            END_STEP,
            FINISH,
        ],
        None,
    ),
    (
        "tool input left streaming (partial JSON)",
        [
            START,
            STEP,
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "w"},
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"city":"Par'},
        ],
        None,
    ),
    (
        "tool input partial with nested array",
        [
            START,
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "w"},
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"city":"Paris","n":[1,2'},
        ],
        None,
    ),
    (
        "tool input partial literal",
        [
            START,
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "w"},
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a":tr'},
        ],
        None,
    ),
    (
        "tool input partial escape sequences",
        [
            START,
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "w"},
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a":"x\\"y\\u00e'},
        ],
        None,
    ),
    (
        "tool input text encoding",
        [
            START,
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "shell", "inputEncoding": "text"},
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "ls -"},
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "la"},
        ],
        None,
    ),
    (
        "tool final-only path (no start/delta)",
        [
            START,
            STEP,
            {
                "type": "tool-input-available",
                "toolCallId": "c1",
                "toolName": "search",
                "input": {"q": "x"},
                "title": "Search",
            },
            {"type": "tool-output-available", "toolCallId": "c1", "output": "found"},
        ],
        None,
    ),
    (
        "duplicate tool-input-start resets the buffer",
        [
            START,
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "w"},
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a":1'},
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "w"},
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"b":'},
        ],
        None,
    ),
    (
        "dynamic tool with metadata and title",
        [
            START,
            STEP,
            *tool_call(
                "c1",
                "mcp_tool",
                '{"x":1}',
                dynamic=True,
                title="MCP",
                toolMetadata={"server": "s"},
                providerMetadata={"p": {"k": "v"}},
            ),
            {
                "type": "tool-output-available",
                "toolCallId": "c1",
                "output": None,
                "dynamic": True,
                "providerMetadata": {"p": {"r": 1}},
            },
        ],
        None,
    ),
    (
        "tool output null",
        [START, *tool_call("c1", "noop", "{}"), {"type": "tool-output-available", "toolCallId": "c1", "output": None}],
        None,
    ),
    (
        "tool output error (static keeps rawInput)",
        [
            START,
            STEP,
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "w"},
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a"'},
            {"type": "tool-output-error", "toolCallId": "c1", "errorText": "boom"},
        ],
        None,
    ),
    (
        "tool output error after input available",
        [
            START,
            *tool_call("c1", "w", '{"a":1}'),
            {"type": "tool-output-error", "toolCallId": "c1", "errorText": "Weather API down"},
        ],
        None,
    ),
    (
        "tool input error on a new call",
        [
            START,
            STEP,
            {
                "type": "tool-input-error",
                "toolCallId": "c1",
                "toolName": "nope",
                "input": "{bad",
                "errorText": "Model tried to call unavailable tool 'nope'",
                "dynamic": True,
            },
        ],
        None,
    ),
    (
        "tool input error keeps the static type of an existing part",
        [
            START,
            STEP,
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "w"},
            {
                "type": "tool-input-error",
                "toolCallId": "c1",
                "toolName": "w",
                "input": {"a": "x"},
                "errorText": "Invalid input",
                "dynamic": True,
            },
        ],
        None,
    ),
    (
        "preliminary outputs then final",
        [
            START,
            *tool_call("c1", "gen", "{}"),
            {"type": "tool-output-available", "toolCallId": "c1", "output": {"p": 1}, "preliminary": True},
            {"type": "tool-output-available", "toolCallId": "c1", "output": {"p": 2}, "preliminary": True},
            {"type": "tool-output-available", "toolCallId": "c1", "output": {"done": True}},
        ],
        None,
    ),
    (
        "provider-executed tool",
        [
            START,
            STEP,
            {
                "type": "tool-input-available",
                "toolCallId": "c1",
                "toolName": "web_search",
                "input": {"query": "x"},
                "providerExecuted": True,
            },
            {
                "type": "tool-output-available",
                "toolCallId": "c1",
                "output": [{"url": "https://a.example"}],
                "providerExecuted": True,
            },
            {"type": "source-url", "sourceId": "s1", "url": "https://a.example", "title": "A"},
        ],
        None,
    ),
    (
        "parallel tool calls, outputs in completion order",
        [
            START,
            STEP,
            *tool_call("c1", "a", "{}"),
            *tool_call("c2", "b", "{}"),
            {"type": "tool-output-available", "toolCallId": "c2", "output": 2},
            {"type": "tool-output-available", "toolCallId": "c1", "output": 1},
            END_STEP,
        ],
        None,
    ),
    (
        "approval requested (user approval)",
        [
            START,
            STEP,
            *tool_call("c1", "deleteFile", '{"path":"/tmp/x"}'),
            {"type": "tool-approval-request", "approvalId": "ap-1", "toolCallId": "c1"},
            END_STEP,
            {"type": "finish", "finishReason": "tool-calls"},
        ],
        None,
    ),
    (
        "approval request with reason, signature, descriptor",
        [
            START,
            *tool_call("c1", "pay", '{"amount":5}'),
            {
                "type": "tool-approval-request",
                "approvalId": "ap-1",
                "toolCallId": "c1",
                "reason": "costs money",
                "signature": "sig",
                "approvalDescriptor": {"title": "Pay"},
                "inputSchemaInput": None,
                "isAutomatic": False,
            },
        ],
        None,
    ),
    (
        "automatic approval then output",
        [
            START,
            STEP,
            *tool_call("c1", "read", '{"p":"a"}'),
            {"type": "tool-approval-request", "approvalId": "ap-1", "toolCallId": "c1", "isAutomatic": True},
            {"type": "tool-approval-response", "approvalId": "ap-1", "approved": True},
            {"type": "tool-output-available", "toolCallId": "c1", "output": "content"},
        ],
        None,
    ),
    (
        "automatic denial then output-denied",
        [
            START,
            STEP,
            *tool_call("c1", "rm", '{"p":"/"}'),
            {"type": "tool-approval-request", "approvalId": "ap-1", "toolCallId": "c1", "isAutomatic": True},
            {"type": "tool-approval-response", "approvalId": "ap-1", "approved": False, "reason": "dangerous"},
            {"type": "tool-output-denied", "toolCallId": "c1"},
            END_STEP,
            STEP,
            *text("t", "I won't."),
            END_STEP,
            FINISH,
        ],
        None,
    ),
    (
        "continuation after approval: output attaches to the earlier step",
        [
            {"type": "start", "messageId": "msg-1"},
            {"type": "tool-output-available", "toolCallId": "call-1", "output": {"deleted": True}},
            STEP,
            *text("t", "Deleted."),
            END_STEP,
            FINISH,
        ],
        ASSISTANT_WAITING,
    ),
    (
        "continuation after denial",
        [
            {"type": "start", "messageId": "msg-1"},
            {"type": "tool-output-denied", "toolCallId": "call-1"},
            STEP,
            *text("t", "OK, not deleted."),
            END_STEP,
            FINISH,
        ],
        ASSISTANT_WAITING,
    ),
    ("continuation without start", [STEP, *text("t", "more")], ASSISTANT_WAITING),
    (
        "start with a different id resets a continued message",
        [{"type": "start", "messageId": "msg-2"}, STEP, *text("t", "fresh")],
        ASSISTANT_WAITING,
    ),
    (
        "violation: output for unknown tool call",
        [START, {"type": "tool-output-available", "toolCallId": "nope", "output": 1}],
        None,
    ),
    (
        "violation: output-error for unknown tool call",
        [START, *text("t", "x"), {"type": "tool-output-error", "toolCallId": "nope", "errorText": "e"}],
        None,
    ),
    (
        "violation: output-denied for unknown tool call",
        [START, {"type": "tool-output-denied", "toolCallId": "nope"}],
        None,
    ),
    (
        "violation: approval request for unknown tool call",
        [START, {"type": "tool-approval-request", "approvalId": "a", "toolCallId": "nope"}],
        None,
    ),
    (
        "violation: approval response for unknown approval",
        [START, *tool_call("c1", "w", "{}"), {"type": "tool-approval-response", "approvalId": "zz", "approved": True}],
        None,
    ),
    (
        "violation: tool-input-delta before start",
        [START, {"type": "tool-input-delta", "toolCallId": "c9", "inputTextDelta": "{"}],
        None,
    ),
    (
        "error chunk mid-stream keeps going",
        [
            START,
            STEP,
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": "par"},
            {"type": "error", "errorText": "An error occurred."},
            END_STEP,
            {"type": "finish", "finishReason": "error"},
        ],
        None,
    ),
    (
        "abort leaves tool input streaming",
        [
            START,
            STEP,
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "w"},
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a":"b'},
            {"type": "abort", "reason": "AbortError: This operation was aborted"},
        ],
        None,
    ),
    (
        "metadata: start, message-metadata and finish deep-merged",
        [
            {
                "type": "start",
                "messageId": "m",
                "messageMetadata": {"schemaVersion": 1, "usage": {"inputTokens": 1}, "tags": [1, 2]},
            },
            {"type": "message-metadata", "messageMetadata": {"usage": {"outputTokens": 2}, "tags": [3]}},
            {"type": "finish", "finishReason": "stop", "messageMetadata": {"completedAt": 5, "model": None}},
        ],
        None,
    ),
    (
        "metadata null value overwrites",
        [
            {"type": "start", "messageMetadata": {"a": 1, "b": {"c": 2}}},
            {"type": "message-metadata", "messageMetadata": {"a": None, "b": {"d": 3}}},
        ],
        None,
    ),
    (
        "data parts: replace by type and id, append without id, transient never stored",
        [
            START,
            {"type": "data-status", "id": "s", "data": {"phase": 1}},
            {"type": "data-status", "id": "s", "data": {"phase": 2}},
            {"type": "data-other", "id": "s", "data": "separate"},
            {"type": "data-log", "data": "a"},
            {"type": "data-log", "data": "a"},
            {"type": "data-progress", "data": 50, "transient": True},
        ],
        None,
    ),
    (
        "data part with explicit transient false is stored as sent",
        [START, {"type": "data-x", "id": "1", "data": None, "transient": False}],
        None,
    ),
    (
        "sources, files, custom",
        [
            START,
            STEP,
            {
                "type": "source-url",
                "sourceId": "s1",
                "url": "https://a.example/x",
                "title": "A",
                "providerMetadata": {"p": {"i": 1}},
            },
            {"type": "source-url", "sourceId": "s1", "url": "https://a.example/x"},
            {
                "type": "source-document",
                "sourceId": "d1",
                "mediaType": "application/pdf",
                "title": "Spec",
                "filename": "spec.pdf",
            },
            {"type": "file", "url": "data:image/png;base64,iVBOR", "mediaType": "image/png"},
            {
                "type": "reasoning-file",
                "url": "data:image/png;base64,AAAA",
                "mediaType": "image/png",
                "providerMetadata": {"p": {}},
            },
            {"type": "custom", "kind": "anthropic.server-tool", "providerMetadata": {"anthropic": {"x": 1}}},
        ],
        None,
    ),
    (
        "reset-step drops the parts of the retried step",
        [
            START,
            STEP,
            *text("a", "kept"),
            END_STEP,
            STEP,
            {"type": "text-start", "id": "b"},
            {"type": "text-delta", "id": "b", "delta": "partial"},
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "w"},
            {"type": "reset-step"},
            *text("c", "retried"),
        ],
        None,
    ),
    ("reset-step with nothing to drop", [START, STEP, {"type": "reset-step"}], None),
    (
        "multi-step: reasoning, tool, text over three steps",
        [
            START,
            STEP,
            *reasoning("r1", "plan"),
            *tool_call("c1", "search", '{"q":"a"}'),
            {"type": "tool-output-available", "toolCallId": "c1", "output": ["r"]},
            END_STEP,
            STEP,
            *tool_call("c2", "fetch", '{"u":"x"}'),
            {"type": "tool-output-error", "toolCallId": "c2", "errorText": "404"},
            END_STEP,
            STEP,
            *text("t", "Done", "."),
            END_STEP,
            FINISH,
        ],
        None,
    ),
    (
        "tool delta after input-available returns it to streaming",
        [
            START,
            *tool_call("c1", "w", '{"a":1}'),
            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "x"},
        ],
        None,
    ),
    (
        "same tool call id in a new step creates a new part",
        [
            START,
            STEP,
            *tool_call("c1", "w", "{}"),
            {"type": "tool-output-available", "toolCallId": "c1", "output": 1},
            END_STEP,
            STEP,
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "w"},
        ],
        None,
    ),
    (
        "steering message chunk",
        [
            START,
            STEP,
            *text("t", "a"),
            END_STEP,
            {"type": "steering-message", "id": "u2", "parts": [{"type": "text", "text": "also do b"}]},
            STEP,
            *text("t2", "b"),
        ],
        None,
    ),
    ("unicode and emoji deltas", [START, *text("t", "你好", "，世界 ", "👋🏽")], None),
    ("error chunk only", [{"type": "start"}, {"type": "error", "errorText": "boom"}], None),
]
