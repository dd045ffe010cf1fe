"""The part of a conversation to summarize, as text a summarizer reads (pure).

Each message becomes labelled lines: `[user]`, `[assistant]`, `[tool call NAME #ID] {input}`,
`[tool result NAME #ID] output`. A long text (a tool output, mostly) keeps its head and tail within
`item_chars`, with how much was cut between them, so one huge result never makes the summarizer's
own request too large (the failure of summarizers that send results whole). `pieces` splits the
lines into transcripts within a token budget, for a summary folded over several calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from ..protocol._json import dumps
from ..protocol.model_messages import ModelMessage

__all__ = ["clip", "pieces", "transcript_lines"]


def clip(text: str, limit: int) -> str:
    """`text` within `limit` characters: its head and tail, and how many characters were left out."""
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    return f"{text[:half]}\n… [{len(text) - 2 * half} characters left out] …\n{text[-half:]}"


def transcript_lines(messages: Sequence[ModelMessage], *, item_chars: int) -> list[str]:
    """One entry per message part worth summarizing, oldest first."""
    lines: list[str] = []
    for message in messages:
        wire = message.to_wire()
        role = str(wire.get("role"))
        content: Any = wire.get("content")
        if isinstance(content, str):
            lines.append(f"[{role}] {clip(content, item_chars)}")
            continue
        for part in cast(list[dict[str, Any]], content if isinstance(content, list) else []):
            line = _part_line(role, part, item_chars)
            if line is not None:
                lines.append(line)
    return lines


def _part_line(role: str, part: dict[str, Any], item_chars: int) -> str | None:
    kind = part.get("type")
    if kind == "text":
        return f"[{role}] {clip(str(part.get('text', '')), item_chars)}"
    if kind == "tool-call":
        return (
            f"[tool call {part.get('toolName')} #{part.get('toolCallId')}] {clip(dumps(part.get('input')), item_chars)}"
        )
    if kind == "tool-result":
        output: Any = part.get("output") or {}
        value: Any = cast(dict[str, Any], output).get("value") if isinstance(output, dict) else output
        text = value if isinstance(value, str) else dumps(value)
        return f"[tool result {part.get('toolName')} #{part.get('toolCallId')}] {clip(text, item_chars)}"
    if kind == "file":
        return f"[{role} file {part.get('mediaType')}]"
    return None  # reasoning (signed, provider-specific), approvals (bookkeeping): not summarized


def pieces(lines: Sequence[str], budget_tokens: int, count: Callable[[str], int]) -> list[str]:
    """The lines joined into transcripts of at most `budget_tokens` each (a line never split)."""
    out: list[str] = []
    current: list[str] = []
    spent = 0
    for line in lines:
        size = count(line) + 1
        if current and spent + size > budget_tokens:
            out.append("\n".join(current))
            current, spent = [], 0
        current.append(line)
        spent += size
    if current:
        out.append("\n".join(current))
    return out
