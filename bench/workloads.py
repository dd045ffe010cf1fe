"""The benchmark workloads, generated exactly as bench/workloads.mjs generates them for the SDK."""

from __future__ import annotations

import json
import math
from typing import Any

Chunk = dict[str, Any]


def _js_number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def text_deltas(n: int) -> list[Chunk]:
    chunks: list[Chunk] = [
        {"type": "start", "messageId": "msg-bench"},
        {"type": "start-step"},
        {"type": "text-start", "id": "t"},
    ]
    chunks += [{"type": "text-delta", "id": "t", "delta": f"tok{i % 97} "} for i in range(n)]
    return chunks + [
        {"type": "text-end", "id": "t"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def tool_input_text(size_bytes: int) -> str:
    rows: list[str] = []
    size = 0
    i = 0
    while size < size_bytes:
        score = (i * 7919) % 1000 / 10
        row = (
            f'{{"id":{i},"name":"row-{i}","score":{_js_number(score)},"tags":["a","b","t{i % 13}"],'
            '"note":"lorem ipsum dolor sit amet"}'
        )
        rows.append(row)
        size += len(row) + 1
        i += 1
    return '{"table":"bench","rows":[' + ",".join(rows) + "]}"


def tool_input_deltas(size_bytes: int, n: int) -> list[Chunk]:
    text = tool_input_text(size_bytes)
    step = math.ceil(len(text) / n)
    chunks: list[Chunk] = [
        {"type": "start", "messageId": "msg-bench"},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "load"},
    ]
    chunks += [
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": text[i : i + step]}
        for i in range(0, len(text), step)
    ]
    return chunks + [
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "load", "input": json.loads(text)},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
