"""The script book the browser tests run (LanguageModelV4 stream parts; see stepline.llm.script_book).

Prompts and what they play:
- "flood": one step of FLOOD_DELTAS text deltas, no pauses (thousands of SSE events at once);
- "fail": a few visible tokens, then a 400 from the model (visible output: not retried): a failed run;
- "stumble": STUMBLE_DELTAS text deltas SLOW_DELAY_MS apart, then the same 400: a run that fails late;
- "slowly": reasoning and list_files, then SLOW_DELTAS text deltas SLOW_DELAY_MS apart;
- "keep talking": the same, with ENDLESS_DELTAS text deltas (minutes): a run that is still
  streaming whenever a test looks, however loaded the machine; the test stops it;
- "artifact": write_file (needs approval), save_artifact, then a short answer;
- "write": write_file (needs approval), then a short answer;
- "ask": ask_user_question (a client-side tool), then a short answer;
- "search the web": a provider-executed `web_search` (its output lists two URLs) and three
  source-url parts after it (one URL of the output again, one twice), then an answer;
- "run the code" / "broken code": a provider-executed `code_interpreter` that prints / fails;
- "run bash": Anthropic's provider-executed `code_execution` running a bash command (its input and
  result in the shape the Anthropic adapter gives them);
- "cite sources": source-url parts with a URL twice and a source-document, then an answer;
- "cite again": source-url parts (one URL again with a #fragment), reasoning, then more source-url
  parts repeating one of the first, then an answer (AGAIN_LISTS: what each source list shows);
- "make files": generated file parts (an image, Markdown, a PDF), then an answer;
- "custom event": a `custom` part, then an answer;
- "two approvals": two write_file calls in one step (both need approval), then an answer;
- "missing file": read_file of a file that is not there (the tool fails), then an answer;
- "interrupted listing": list_files as `call-interrupted` (a test makes an earlier attempt of it
  look started, so it is reported interrupted), then an answer;
- "long arguments": write_file (needs approval) with LONG_ARGUMENTS (long text, a long word, nested values);
- anything else: reasoning and a short Markdown answer.
"""

from __future__ import annotations

import json
from typing import Any

FLOOD_DELTAS = 3000
SLOW_DELTAS = 40
ENDLESS_DELTAS = 3000
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


def provider_tool(
    call_id: str, name: str, arguments: dict[str, Any], result: Any, *, error: bool = False
) -> list[dict[str, Any]]:
    """A tool the provider runs (web search, code execution): its call and its result, in the model's stream."""
    encoded = json.dumps(arguments)
    flags = {"providerExecuted": True, "dynamic": True}
    outcome: dict[str, Any] = {"type": "tool-result", "toolCallId": call_id, "toolName": name, "result": result}
    if error:
        outcome["isError"] = True
    return [
        {"type": "tool-input-start", "id": call_id, "toolName": name, **flags},
        {"type": "tool-input-delta", "id": call_id, "delta": encoded},
        {"type": "tool-input-end", "id": call_id},
        {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": encoded, **flags},
        outcome,
    ]


def source(source_id: str, url: str, title: str) -> dict[str, Any]:
    return {"type": "source", "sourceType": "url", "id": source_id, "url": url, "title": title}


SEARCH_OUTPUT_URLS = ["https://example.com/stepline-news", "https://example.org/durable-agents"]
SEARCH_SOURCE_URLS = [
    "https://example.org/durable-agents",
    "https://example.net/step-functions",
    "https://example.net/step-functions",
]
SEARCH_URLS = [
    "https://example.com/stepline-news",
    "https://example.org/durable-agents",
    "https://example.net/step-functions",
]
"""What the WebSearchBlock shows: the output's URLs, then the sources', each URL once."""
CITED_URLS = ["https://example.com/a", "https://example.com/b", "https://example.com/a"]
AGAIN_FIRST = ["https://example.com/a", "https://example.com/a#intro", "https://example.com/b"]
AGAIN_SECOND = ["https://example.com/b", "https://example.com/c"]
AGAIN_LISTS = [["https://example.com/a", "https://example.com/b"], ["https://example.com/c"]]
"""Each URL once per message, its #fragment ignored (spec 000: the hash is removed before deduplication)."""
PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
NOTES_MD = "# Findings\n\n- durable\n- *serverless*\n"
TINY_PDF = (
    "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj "
    "3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 100]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


def flood_text() -> str:
    return "".join(flood_deltas())


def flood_deltas() -> list[str]:
    return [f"w{i} " for i in range(FLOOD_DELTAS)]


def endless_deltas() -> list[str]:
    return [f"talk{i} " for i in range(ENDLESS_DELTAS)]


def slow_deltas() -> list[str]:
    return [f"tick{i} " for i in range(SLOW_DELTAS)]


LONG_WORD = "x" * 300
LONG_ARGUMENTS: dict[str, Any] = {
    "path": "notes/long.md",
    "content": "".join(f"Line {i} of a note long enough that a cut would hide its end.\n" for i in range(30))
    + "THE LAST LINE",
    "word": LONG_WORD,
    "options": {"mode": "create", "tags": ["draft", "review"], "owner": {"name": "Ada", "team": "docs"}},
    "overwrite": False,
    "count": 3,
}
"""write_file's arguments in "long arguments" (the tool takes path and content; the others are extra)."""

BOOK_SCRIPTS: dict[str, Any] = {
    "scripts": [
        {
            "name": "search",
            "match": ["search the web"],
            "steps": [
                step(
                    provider_tool(
                        "ws-1",
                        "web_search",
                        {"query": "durable AI agents on AWS"},
                        {"results": [{"url": u, "title": f"Result {i}"} for i, u in enumerate(SEARCH_OUTPUT_URLS)]},
                    )
                    + [source(f"src-{i}", u, f"Source {i}") for i, u in enumerate(SEARCH_SOURCE_URLS)]
                    + text(["Three sources agree: ", "durable agents run well on Step Functions."])
                )
            ],
        },
        {
            "name": "code",
            "match": ["run the code"],
            "steps": [
                step(
                    provider_tool(
                        "ci-1", "code_interpreter", {"language": "python", "code": "print(sum(range(1, 101)))"}, "5050"
                    )
                    + text(["The sum is 5050."])
                )
            ],
        },
        {
            "name": "bash",
            "match": ["run bash"],
            "steps": [
                step(
                    provider_tool(
                        "srvtoolu_1",
                        "code_execution",
                        {"type": "bash_code_execution", "command": "ls /tmp | wc -l"},
                        {"type": "bash_code_execution_result", "stdout": "3\n", "stderr": "", "return_code": 0},
                    )
                    + text(["There are 3 entries."])
                )
            ],
        },
        {
            "name": "broken-code",
            "match": ["broken code"],
            "steps": [
                step(
                    provider_tool(
                        "ci-2",
                        "code_interpreter",
                        {"language": "python", "code": "print(undefined_name)"},
                        "NameError: name 'undefined_name' is not defined",
                        error=True,
                    )
                    + text(["The code failed."])
                )
            ],
        },
        {
            "name": "cite",
            "match": ["cite sources"],
            "steps": [
                step(
                    [source(f"c-{i}", u, f"Page {i}") for i, u in enumerate(CITED_URLS)]
                    + [
                        {
                            "type": "source",
                            "sourceType": "document",
                            "id": "d-1",
                            "title": "Handbook",
                            "mediaType": "application/pdf",
                            "filename": "handbook.pdf",
                        }
                    ]
                    + text(["Cited."])
                )
            ],
        },
        {
            "name": "cite-again",
            "match": ["cite again"],
            "steps": [
                step(
                    [source(f"g-{i}", u, f"First {i}") for i, u in enumerate(AGAIN_FIRST)]
                    + reasoning(["Reading them again."])
                    + [source(f"h-{i}", u, f"Second {i}") for i, u in enumerate(AGAIN_SECOND)]
                    + text(["Cited again."])
                )
            ],
        },
        {
            "name": "files",
            "match": ["make files"],
            "steps": [
                step(
                    [
                        {"type": "file", "mediaType": "image/png", "data": PIXEL_PNG},
                        {"type": "file", "mediaType": "text/markdown", "data": _b64(NOTES_MD)},
                        {"type": "file", "mediaType": "application/pdf", "data": _b64(TINY_PDF)},
                    ]
                    + text(["Here are the files."])
                )
            ],
        },
        {
            "name": "custom",
            "match": ["custom event"],
            "steps": [step([{"type": "custom", "kind": "acme.progress"}] + text(["After the custom event."]))],
        },
        {
            "name": "two-approvals",
            "match": ["two approvals"],
            "steps": [
                step(
                    tool("call-w1", "write_file", {"path": "notes/one.md", "content": "one\n"})
                    + tool("call-w2", "write_file", {"path": "notes/two.md", "content": "two\n"}),
                    finish="tool-calls",
                ),
                step(text(["Both decided."])),
            ],
        },
        {
            "name": "missing-file",
            "match": ["missing file"],
            "steps": [
                step(tool("call-missing", "read_file", {"path": "nothing/here.md"}), finish="tool-calls"),
                step(text(["There is no such file."])),
            ],
        },
        {
            "name": "interrupted",
            "match": ["interrupted listing"],
            "steps": [
                step(tool("call-interrupted", "list_files", {}), finish="tool-calls"),
                step(text(["The listing was interrupted."])),
            ],
        },
        {
            "name": "long-arguments",
            "match": ["long arguments"],
            "steps": [
                step(tool("call-long", "write_file", LONG_ARGUMENTS), finish="tool-calls"),
                step(text(["Written."])),
            ],
        },
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
            "name": "endless",
            "match": ["keep talking"],
            "steps": [
                step(
                    reasoning(["Looking at the workspace ", "first."]) + tool("call-list", "list_files", {}),
                    delay_ms=40,
                    finish="tool-calls",
                ),
                step(text(endless_deltas()), delay_ms=SLOW_DELAY_MS),
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
