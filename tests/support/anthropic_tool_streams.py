"""Anthropic server tool streams for the fake, written from the `anthropic` SDK's block types.

Each `Scenario` is what one server tool looks like on the wire (`ServerToolUseBlock`,
`WebSearchToolResultBlock` with `WebSearchResultBlock`s, `CitationsWebSearchResultLocation` in a
`citations_delta`, `WebFetchToolResultBlock` holding a `DocumentBlock`, the code execution
sub-tools' `BashCodeExecutionToolResultBlock` / `TextEditorCodeExecutionToolResultBlock`, and
each `*_tool_result_error`), with the replies of a first turn and of a follow-up turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.support import fake_anthropic as fa

__all__ = ["SCENARIOS", "Scenario"]

RESULTS: list[dict[str, Any]] = [
    {
        "type": "web_search_result",
        "url": "https://weather.example/paris",
        "title": "Paris weather",
        "page_age": "2 days ago",
        "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5",
    },
    {
        "type": "web_search_result",
        "url": "https://news.example/rain",
        "title": "Rain all week",
        "page_age": None,
        "encrypted_content": "EpMDCioIARgBIiQ0NDZkZDQ2",
    },
]
WEB_CITATION = {
    "type": "web_search_result_location",
    "url": "https://weather.example/paris",
    "title": "Paris weather",
    "cited_text": "Rain is expected in Paris all week.",
    "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm",
}
PAGE = "Stepline runs one model step per Lambda invocation."
FETCHED: dict[str, Any] = {
    "type": "web_fetch_result",
    "url": "https://docs.example/loop",
    "retrieved_at": "2026-11-30T10:00:00Z",
    "content": {
        "type": "document",
        "title": "The agent loop",
        "citations": {"enabled": True},
        "source": {"type": "text", "media_type": "text/plain", "data": PAGE},
    },
}
DOC_CITATION = {
    "type": "char_location",
    "cited_text": PAGE,
    "document_index": 0,
    "document_title": "The agent loop",
    "start_char_index": 0,
    "end_char_index": len(PAGE),
}
BASH_RESULT: dict[str, Any] = {
    "type": "bash_code_execution_result",
    "stdout": "4\n",
    "stderr": "",
    "return_code": 0,
    "content": [],
}
CREATED = {"type": "text_editor_code_execution_create_result", "is_file_update": False}


def _text(index: int, *chunks: str) -> list[fa.SseEvent]:
    return fa.text_block(index, *chunks)


def _cited(index: int, text: str, citation: dict[str, Any]) -> list[fa.SseEvent]:
    """A cited text block: the API streams the citation before the text it supports."""
    start = fa.SseEvent(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": "", "citations": []}},
    )
    cite = fa.SseEvent(
        "content_block_delta",
        {"type": "content_block_delta", "index": index, "delta": {"type": "citations_delta", "citation": citation}},
    )
    delta = fa.SseEvent(
        "content_block_delta",
        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}},
    )
    stop = fa.SseEvent("content_block_stop", {"type": "content_block_stop", "index": index})
    return [start, cite, delta, stop]


@dataclass(frozen=True)
class Scenario:
    """One server tool's exchange: the tool (factory name and arguments), the replies, the follow-up reply."""

    tool: str
    args: dict[str, Any]
    replies: list[list[fa.SseEvent]]
    follow_up: list[fa.SseEvent] = field(default_factory=lambda: fa.message(_text(0, "You are welcome.")))
    client_tool: bool = False
    """The model also calls the client tool `weather` (the run takes a second step)."""

    @property
    def steps(self) -> int:
        return len(self.replies)


SEARCH = fa.server_tool_use_block(0, "srvtoolu_01", "web_search", '{"query": ', '"paris weather"}')
SCENARIOS: dict[str, Scenario] = {
    "web search with cited text": Scenario(
        "webSearch_20250305",
        {
            "maxUses": 3,
            "allowedDomains": ["weather.example", "news.example"],
            "userLocation": {"type": "approximate", "city": "Paris"},
        },
        [
            fa.message(
                _text(0, "Let me look."),
                fa.server_tool_use_block(1, "srvtoolu_01", "web_search", '{"query": ', '"paris weather"}'),
                fa.server_tool_result_block(2, "web_search_tool_result", "srvtoolu_01", RESULTS),
                _cited(3, "Rain all week.", WEB_CITATION),
                server_tool_use={"web_search_requests": 1, "web_fetch_requests": 0},
            )
        ],
    ),
    "web search error": Scenario(
        "webSearch_20250305",
        {},
        [
            fa.message(
                SEARCH,
                fa.server_tool_result_block(
                    1,
                    "web_search_tool_result",
                    "srvtoolu_01",
                    {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"},
                ),
                _text(2, "I could not search."),
            )
        ],
    ),
    "web fetch with a document citation": Scenario(
        "webFetch_20250910",
        {"maxUses": 2, "citations": {"enabled": True}, "maxContentTokens": 4000},
        [
            fa.message(
                fa.server_tool_use_block(0, "srvtoolu_02", "web_fetch", '{"url": "https://docs.example/loop"}'),
                fa.server_tool_result_block(1, "web_fetch_tool_result", "srvtoolu_02", FETCHED),
                _cited(2, "One step per invocation.", DOC_CITATION),
            )
        ],
    ),
    "web fetch error": Scenario(
        "webFetch_20250910",
        {"blockedDomains": ["private.example"]},
        [
            fa.message(
                fa.server_tool_use_block(0, "srvtoolu_02", "web_fetch", '{"url": "https://private.example/"}'),
                fa.server_tool_result_block(
                    1,
                    "web_fetch_tool_result",
                    "srvtoolu_02",
                    {"type": "web_fetch_tool_result_error", "error_code": "url_not_allowed"},
                ),
                _text(2, "That site is blocked."),
            )
        ],
    ),
    "code execution: bash and the text editor": Scenario(
        "codeExecution_20250825",
        {},
        [
            fa.message(
                fa.server_tool_use_block(
                    0,
                    "srvtoolu_03",
                    "text_editor_code_execution",
                    '{"command": "create", ',
                    '"path": "a.py", "file_text": "print(2+2)"}',
                ),
                fa.server_tool_result_block(1, "text_editor_code_execution_tool_result", "srvtoolu_03", CREATED),
                fa.server_tool_use_block(2, "srvtoolu_04", "bash_code_execution", '{"command": "python a.py"}'),
                fa.server_tool_result_block(3, "bash_code_execution_tool_result", "srvtoolu_04", BASH_RESULT),
                _text(4, "It prints 4."),
            )
        ],
    ),
    "code execution error": Scenario(
        "codeExecution_20250825",
        {},
        [
            fa.message(
                fa.server_tool_use_block(0, "srvtoolu_04", "bash_code_execution", '{"command": "sleep 999"}'),
                fa.server_tool_result_block(
                    1,
                    "bash_code_execution_tool_result",
                    "srvtoolu_04",
                    {"type": "bash_code_execution_tool_result_error", "error_code": "execution_time_exceeded"},
                ),
                _text(2, "It timed out."),
            )
        ],
    ),
    "web search, then a client tool in the same step": Scenario(
        "webSearch_20250305",
        {},
        [
            fa.message(
                SEARCH,
                fa.server_tool_result_block(1, "web_search_tool_result", "srvtoolu_01", RESULTS),
                fa.tool_use_block(2, "toolu_05", "weather", '{"city": "Paris"}'),
                stop_reason="tool_use",
            ),
            fa.message(_cited(0, "Rain, 18 degrees.", WEB_CITATION)),
        ],
        client_tool=True,
    ),
}
