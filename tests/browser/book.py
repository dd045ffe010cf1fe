"""The script book the browser tests run (LanguageModelV4 stream parts; see stepline.llm.script_book).

Prompts and what they play:
- "flood": one step of FLOOD_DELTAS text deltas, no pauses (thousands of SSE events at once);
- "fail": a few visible tokens, then a 400 from the model (visible output: not retried): a failed run;
- "stumble": STUMBLE_DELTAS text deltas SLOW_DELAY_MS apart, then the same 400: a run that fails late;
- "slowly": reasoning and list_files, then SLOW_DELTAS text deltas SLOW_DELAY_MS apart;
- "artifact": write_file (needs approval), save_artifact, then a short answer;
- "write": write_file (needs approval), then a short answer;
- "ask": ask_user_question (a client-side tool), then a short answer;
- anything else: reasoning and a short Markdown answer.
"""

from __future__ import annotations

import json
from typing import Any

FLOOD_DELTAS = 3000
SLOW_DELTAS = 40
SLOW_DELAY_MS = 70
STUMBLE_DELTAS = 25
REFUSAL = {"kind": "bad_request", "status": 400, "message": "the model refused the request (scripted)"}

USAGE = {"inputTokens": {"total": 100, "noCache": 100}, "outputTokens": {"total": 20}}


def step(parts: list[dict[str, Any]], *, delay_ms: int = 0, finish: str = "stop") -> dict[str, Any]:
    end = {"type": "finish", "finishReason": {"unified": finish, "raw": finish}, "usage": USAGE}
    return {"parts": [{"type": "stream-start", "warnings": []}, *parts, end], "delayMs": delay_ms}


def text(deltas: list[str], part_id: str = "t1") -> list[dict[str, Any]]:
    return [
        {"type": "text-start", "id": part_id},
        *({"type": "text-delta", "id": part_id, "delta": d} for d in deltas),
        {"type": "text-end", "id": part_id},
    ]


def reasoning(deltas: list[str]) -> list[dict[str, Any]]:
    return [
        {"type": "reasoning-start", "id": "r1"},
        *({"type": "reasoning-delta", "id": "r1", "delta": d} for d in deltas),
        {"type": "reasoning-end", "id": "r1"},
    ]


def tool(call_id: str, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    encoded = json.dumps(arguments)
    return [
        {"type": "tool-input-start", "id": call_id, "toolName": name},
        {"type": "tool-input-delta", "id": call_id, "delta": encoded},
        {"type": "tool-input-end", "id": call_id},
        {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": encoded},
    ]


def flood_text() -> str:
    return "".join(flood_deltas())


def flood_deltas() -> list[str]:
    return [f"w{i} " for i in range(FLOOD_DELTAS)]


def slow_deltas() -> list[str]:
    return [f"tick{i} " for i in range(SLOW_DELTAS)]


BOOK_SCRIPTS: dict[str, Any] = {
    "scripts": [
        {"name": "flood", "match": ["flood"], "steps": [step(text(flood_deltas()))]},
        {
            "name": "fail",
            "match": ["fail"],
            "steps": [{**step(text(["Working on it"])), "raise": REFUSAL, "after": 3}],
        },
        {
            "name": "stumble",
            "match": ["stumble"],
            "steps": [
                {
                    **step(text([f"try{i} " for i in range(STUMBLE_DELTAS)]), delay_ms=SLOW_DELAY_MS),
                    "raise": REFUSAL,
                    "after": 2 + STUMBLE_DELTAS,
                }
            ],
        },
        {
            "name": "slow",
            "match": ["slowly"],
            "steps": [
                step(
                    reasoning(["Looking at the workspace ", "first."]) + tool("call-list", "list_files", {}),
                    delay_ms=40,
                    finish="tool-calls",
                ),
                step(text(slow_deltas()), delay_ms=SLOW_DELAY_MS),
            ],
        },
        {
            "name": "artifact",
            "match": ["artifact"],
            "steps": [
                step(
                    tool("call-write", "write_file", {"path": "notes/hello.md", "content": "# Hello artifact\n"}),
                    finish="tool-calls",
                ),
                step(
                    tool("call-save", "save_artifact", {"path": "notes/hello.md", "title": "Hello"}),
                    finish="tool-calls",
                ),
                step(text(["Saved."])),
            ],
        },
        {
            "name": "write",
            "match": ["write"],
            "steps": [
                step(
                    reasoning(["Writing needs approval."])
                    + tool("call-write", "write_file", {"path": "notes/hello.md", "content": "# Hello\n"}),
                    finish="tool-calls",
                ),
                step(text(["The note ", "is handled."])),
            ],
        },
        {
            "name": "ask",
            "match": ["ask"],
            "steps": [
                step(
                    tool("call-ask", "ask_user_question", {"question": "Which colour?", "options": ["Red", "Blue"]}),
                    finish="tool-calls",
                ),
                step(text(["Thanks for ", "answering."])),
            ],
        },
    ],
    "fallback": [step(reasoning(["Nothing to do but answer."]) + text(["Hello ", "from the **script**."]))],
}
