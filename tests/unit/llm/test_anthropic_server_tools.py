"""Anthropic server tool edges the wire comparisons do not reach: errors carried within a run, code
execution's programmatic input, and which citations become sources."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import JsonValue

from stepline import Agent
from stepline.llm.anthropic import tools as anthropic_tools
from stepline.llm.anthropic.content import PromptContext
from stepline.llm.anthropic.prompt import convert_prompt
from stepline.llm.anthropic.server_results import prompt_documents
from stepline.llm.anthropic.stream import AnthropicStreamState
from stepline.llm.anthropic.traits import anthropic_capabilities, model_traits
from stepline.protocol.model_messages import (
    AssistantModelMessage,
    DataFileData,
    ErrorJsonOutput,
    ErrorTextOutput,
    JsonOutput,
    ModelFilePart,
    ModelTextPart,
    ToolCallPart,
    ToolResultOutput,
    ToolResultPart,
    UserModelMessage,
)

MODEL = "claude-sonnet-4-6"


def sent_back(*parts: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    context = PromptContext(MODEL, anthropic_capabilities(MODEL))
    prompt = convert_prompt(
        [UserModelMessage(content=[ModelTextPart(text="hi")]), AssistantModelMessage(content=list(parts))], context
    )
    content = prompt.messages[1]["content"]
    assert isinstance(content, list)
    return [dict(block) for block in content if isinstance(block, dict)], [dict(w) for w in context.warnings]


def result(call_id: str, name: str, output: ToolResultOutput) -> ToolResultPart:
    return ToolResultPart(tool_call_id=call_id, tool_name=name, output=output)


ERROR: dict[str, JsonValue] = {"type": "web_search_tool_result_error", "errorCode": "too_many_requests"}


@pytest.mark.parametrize(
    "output",
    [ErrorTextOutput(value=json.dumps(ERROR)), ErrorJsonOutput(value=ERROR), ErrorJsonOutput(value=json.dumps(ERROR))],
    ids=["a step of this run (error-text)", "the SDK's error-json", "a UI message's errorText (next turn)"],
)
def test_a_search_error_goes_back_as_its_error_block_however_it_was_carried(output: ToolResultOutput) -> None:
    blocks, warnings = sent_back(result("srv_1", "web_search", output))
    assert blocks == [
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srv_1",
            "content": {"type": "web_search_tool_result_error", "error_code": "too_many_requests"},
        }
    ]
    assert warnings == []


def test_an_unreadable_fetch_error_falls_back_to_unavailable() -> None:
    blocks, _ = sent_back(result("srv_2", "web_fetch", ErrorTextOutput(value="boom")))
    assert blocks[0]["content"] == {"type": "web_fetch_tool_result_error", "error_code": "unavailable"}


def test_code_execution_calls_go_back_under_their_sub_tool_names_and_results_by_their_type() -> None:
    bash: dict[str, JsonValue] = {"type": "bash_code_execution", "command": "ls"}
    program: dict[str, JsonValue] = {"type": "programmatic-tool-call", "code": "print(1)"}
    listed: dict[str, JsonValue] = {
        "type": "bash_code_execution_result",
        "content": [],
        "stdout": "a.py\n",
        "stderr": "",
        "return_code": 0,
    }
    viewed: dict[str, JsonValue] = {
        "type": "text_editor_code_execution_view_result",
        "content": "x",
        "file_type": "text",
        "num_lines": 1,
        "start_line": 1,
        "total_lines": 1,
    }
    ran: dict[str, JsonValue] = {"type": "code_execution_result", "stdout": "1\n", "stderr": "", "return_code": 0}
    blocks, _ = sent_back(
        ToolCallPart(tool_call_id="s1", tool_name="code_execution", input=bash, provider_executed=True),
        result("s1", "code_execution", JsonOutput(value=listed)),
        result("s2", "code_execution", JsonOutput(value=viewed)),
        ToolCallPart(tool_call_id="s3", tool_name="code_execution", input=program, provider_executed=True),
        result("s3", "code_execution", JsonOutput(value=ran)),
        result("s4", "code_execution", ErrorJsonOutput(value={"type": "code_execution_tool_result_error"})),
    )
    assert blocks[0] == {
        "type": "server_tool_use",
        "id": "s1",
        "name": "bash_code_execution",
        "input": {"command": "ls"},
    }
    # the SDK's key order (type, stdout, stderr, return_code, content): prompt caching wants the same bytes
    assert list(blocks[1]["content"]) == ["type", "stdout", "stderr", "return_code", "content"]
    assert blocks[1]["type"] == "bash_code_execution_tool_result"
    assert (blocks[2]["type"], blocks[2]["content"]) == ("text_editor_code_execution_tool_result", viewed)
    assert blocks[3] == {"type": "server_tool_use", "id": "s3", "name": "code_execution", "input": {"code": "print(1)"}}
    assert blocks[4]["content"] == {**ran, "content": []}
    assert blocks[5]["content"] == {"type": "code_execution_tool_result_error", "error_code": "unknown"}


def feed(state: AnthropicStreamState, *events: dict[str, Any]) -> list[dict[str, Any]]:
    return [part.to_wire() for event in events for part in state.feed(str(event["type"]), json.dumps(event))]


def block(index: int, content: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": content},
        {"type": "content_block_stop", "index": index},
    ]


def test_a_programmatic_code_execution_call_gets_its_type_as_the_sdk_gives_it() -> None:
    parts = feed(
        AnthropicStreamState(),
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "server_tool_use", "id": "s1", "name": "code_execution", "input": {}},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"code":'}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '"1"}'}},
        {"type": "content_block_stop", "index": 0},
    )
    assert [p.get("delta") for p in parts if p["type"] == "tool-input-delta"] == [
        '{"type": "programmatic-tool-call","code":',
        '"1"}',
    ]
    assert json.loads(parts[-1]["input"]) == {"type": "programmatic-tool-call", "code": "1"}


def test_web_citations_are_sources_only_when_the_message_brought_no_search_results() -> None:
    citation = {
        "type": "web_search_result_location",
        "url": "https://a.example",
        "cited_text": "x",
        "encrypted_index": "I",
    }
    cited = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": citation}},
        {"type": "content_block_stop", "index": 0},
    ]
    results = [{"type": "web_search_result", "url": "https://a.example", "title": "A", "encrypted_content": "E"}]
    ids = iter(f"id-{n}" for n in range(10))

    alone = feed(AnthropicStreamState(new_id=lambda: next(ids)), *cited, {"type": "message_stop"})
    searched = feed(
        AnthropicStreamState(),
        *block(0, {"type": "web_search_tool_result", "tool_use_id": "s", "content": results}),
        *[{**event, "index": 1} for event in cited],
        {"type": "message_stop"},
    )

    assert [p for p in alone if p["type"] == "source"] == [
        {
            "type": "source",
            "sourceType": "url",
            "id": "id-0",
            "url": "https://a.example",
            "providerMetadata": {"anthropic": {"citedText": "x", "encryptedIndex": "I"}},
        }
    ]
    assert [p["url"] for p in searched if p["type"] == "source"] == ["https://a.example"]  # the result's only


def test_server_tools_follow_the_model_generation() -> None:
    assert [model_traits(m).server_tools for m in ("claude-3-haiku-20240307", "claude-3-5-sonnet-20241022")] == [
        False,
        False,
    ]
    assert all(model_traits(m).server_tools for m in ("claude-3-5-haiku-latest", "claude-3-7-sonnet-latest", MODEL))


def test_a_citation_of_a_user_document_is_a_document_source_named_after_the_file() -> None:
    pdf = ModelFilePart(
        media_type="application/pdf",
        data=DataFileData(data="JVBERi0x"),
        filename="contract.pdf",
        provider_options={"anthropic": {"citations": {"enabled": True}}},
    )
    ignored = ModelFilePart(media_type="application/pdf", data=DataFileData(data="JVBERi0x"), filename="other.pdf")
    documents = prompt_documents([UserModelMessage(content=[ignored, ModelTextPart(text="read"), pdf])])
    citation = {
        "type": "page_location",
        "cited_text": "Clause 4",
        "document_index": 0,
        "start_page_number": 2,
        "end_page_number": 3,
    }

    parts = feed(
        AnthropicStreamState(documents=documents, new_id=lambda: "s1"),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": citation}},
        {"type": "content_block_stop", "index": 0},
    )

    assert parts[1] == {
        "type": "source",
        "sourceType": "document",
        "id": "s1",
        "mediaType": "application/pdf",
        "title": "contract.pdf",
        "filename": "contract.pdf",
        "providerMetadata": {"anthropic": {"citedText": "Clause 4", "startPageNumber": 2, "endPageNumber": 3}},
    }
    assert parts[2]["citations"][0]["source"]["title"] == "contract.pdf"


def test_an_agents_fingerprint_follows_its_server_tools_options() -> None:
    def agent(uses: int) -> Agent:
        return Agent(name="a", model="anthropic:claude-sonnet-4-6", tools=[anthropic_tools.web_search(max_uses=uses)])

    assert agent(3).fingerprint() == agent(3).fingerprint()
    assert agent(3).fingerprint() != agent(5).fingerprint()
