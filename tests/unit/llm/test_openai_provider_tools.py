"""OpenAI's built-in tools: the factories, the request's tools, the stream mapping, the next input (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from stepline.llm.base import FunctionTool, ModelCallOptions, ProviderTool, ToolDefinition
from stepline.llm.errors import UnsupportedCapabilityError
from stepline.llm.openai import tools as openai_tools
from stepline.llm.openai.responses_convert import build_responses_request
from stepline.llm.openai.responses_stream import ResponsesStreamState
from stepline.llm.openai.responses_tools import ToolNames
from stepline.protocol.model_messages import (
    AssistantModelMessage,
    ExecutionDeniedOutput,
    JsonOutput,
    ModelTextPart,
    ToolCallPart,
    ToolResultPart,
    UserModelMessage,
)
from tests.support import openai_tool_events as ev

Json = dict[str, Any]
HELLO = UserModelMessage(content=[ModelTextPart(text="hello")])
WEATHER = FunctionTool(name="weather", input_schema={"type": "object"})


def request(*tools: ToolDefinition, **options: Any) -> Json:
    return build_responses_request("gpt-4.1", ModelCallOptions(prompt=[HELLO], tools=list(tools), **options)).body


def definition(tool: Any) -> ToolDefinition:
    return tool.definition()


# --- the factories and the request ----------------------------------------------------------------


def test_each_factory_is_a_provider_tool_the_loop_never_runs() -> None:
    for tool in (
        openai_tools.web_search(),
        openai_tools.file_search(["vs_1"]),
        openai_tools.code_interpreter(),
        openai_tools.image_generation(),
    ):
        assert isinstance(tool.provider, ProviderTool) and tool.definition() is tool.provider
        assert tool.execute is None and not tool.client_side


def test_every_option_reaches_the_api_in_its_own_words() -> None:
    body = request(
        definition(
            openai_tools.web_search(
                allowed_domains=["a.com"],
                blocked_domains=["b.com"],
                user_location=openai_tools.UserLocation(
                    country="GB", city="London", region="LDN", timezone="Europe/London"
                ),
                search_context_size="high",
                external_web_access=False,
            )
        ),
        definition(
            openai_tools.file_search(
                ["vs_1", "vs_2"],
                max_num_results=4,
                ranker="auto",
                score_threshold=0.3,
                filters={"key": "team", "type": "eq", "value": "infra"},
            )
        ),
        definition(
            openai_tools.code_interpreter(
                container=openai_tools.CodeInterpreterContainer(
                    file_ids=["file_1"], memory_limit="16g", allowed_domains=["pypi.org"]
                )
            )
        ),
        definition(
            openai_tools.image_generation(
                size="1536x1024",
                quality="high",
                output_format="webp",
                output_compression=80,
                background="transparent",
                partial_images=2,
                moderation="low",
                model="gpt-image-1",
                action="generate",
                input_fidelity="high",
            )
        ),
        WEATHER,
    )
    assert body["tools"] == [
        {
            "type": "web_search",
            "filters": {"allowed_domains": ["a.com"], "blocked_domains": ["b.com"]},
            "external_web_access": False,
            "search_context_size": "high",
            "user_location": {
                "type": "approximate",
                "country": "GB",
                "city": "London",
                "region": "LDN",
                "timezone": "Europe/London",
            },
        },
        {
            "type": "file_search",
            "vector_store_ids": ["vs_1", "vs_2"],
            "max_num_results": 4,
            "ranking_options": {"ranker": "auto", "score_threshold": 0.3},
            "filters": {"key": "team", "type": "eq", "value": "infra"},
        },
        {
            "type": "code_interpreter",
            "container": {
                "type": "auto",
                "file_ids": ["file_1"],
                "memory_limit": "16g",
                "network_policy": {"type": "allowlist", "allowed_domains": ["pypi.org"]},
            },
        },
        {
            "type": "image_generation",
            "action": "generate",
            "background": "transparent",
            "input_fidelity": "high",
            "model": "gpt-image-1",
            "moderation": "low",
            "partial_images": 2,
            "quality": "high",
            "output_compression": 80,
            "output_format": "webp",
            "size": "1536x1024",
        },
        {"type": "function", "name": "weather", "parameters": {"type": "object"}},
    ]
    assert body["include"] == ["web_search_call.action.sources", "code_interpreter_call.outputs"]


def test_a_container_id_and_no_container() -> None:
    assert request(definition(openai_tools.code_interpreter(container="cntr_9")))["tools"] == [
        {"type": "code_interpreter", "container": "cntr_9"}
    ]
    assert request(definition(openai_tools.code_interpreter()))["tools"] == [
        {"type": "code_interpreter", "container": {"type": "auto"}}
    ]
    disabled = openai_tools.CodeInterpreterContainer(network_disabled=True)
    assert request(definition(openai_tools.code_interpreter(container=disabled)))["tools"][0]["container"] == {
        "type": "auto",
        "network_policy": {"type": "disabled"},
    }


@pytest.mark.parametrize(
    "make",
    [
        lambda: openai_tools.file_search([]),
        lambda: openai_tools.image_generation(partial_images=4),
        lambda: openai_tools.image_generation(output_compression=101),
        lambda: openai_tools.code_interpreter(
            container=openai_tools.CodeInterpreterContainer(network_disabled=True, allowed_domains=["a.com"])
        ).definition(),
    ],
)
def test_impossible_options_fail_when_the_tool_is_made(make: Any) -> None:
    with pytest.raises(ValueError):
        make()


def test_a_tool_choice_naming_a_provider_tool_by_the_agents_name_is_its_type() -> None:
    search = definition(openai_tools.web_search(name="search"))
    assert request(search, WEATHER, tool_choice={"type": "tool", "toolName": "search"})["tool_choice"] == {
        "type": "web_search"
    }
    assert request(search, WEATHER, tool_choice={"type": "tool", "toolName": "weather"})["tool_choice"] == {
        "type": "function",
        "name": "weather",
    }
    allowed = {"openai": {"allowedTools": {"toolNames": ["search", "weather"], "mode": "required"}}}
    assert request(search, WEATHER, provider_options=allowed)["tool_choice"] == {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "web_search"}, {"type": "function", "name": "weather"}],
    }


def test_another_providers_tool_is_refused_before_any_request() -> None:
    tool = ProviderTool(id="anthropic.web_fetch_20250910", name="web_fetch")
    with pytest.raises(UnsupportedCapabilityError, match="anthropic.web_fetch_20250910"):
        request(tool)


# --- the stream -------------------------------------------------------------------------------------


def stream(events: list[Json], tools: list[ToolDefinition]) -> list[Json]:
    state = ResponsesStreamState(tool_names=ToolNames.of(tools))
    parts = [part for event in events for part in state.process(event)] + state.finish()
    return [part.to_wire() for part in parts]


def test_calls_stream_under_the_agents_name() -> None:
    parts = stream(ev.web_search_response(), [definition(openai_tools.web_search(name="search"))])
    calls = [p for p in parts if p["type"] in ("tool-call", "tool-result")]
    assert [(p["type"], p["toolName"]) for p in calls] == [("tool-call", "search"), ("tool-result", "search")]
    assert calls[0]["providerExecuted"] is True


def test_a_failed_search_is_an_error_result() -> None:
    parts = stream(ev.web_search_response(status="failed"), [definition(openai_tools.web_search())])
    result = next(p for p in parts if p["type"] == "tool-result")
    assert result == {
        "type": "tool-result",
        "toolCallId": "ws_1",
        "toolName": "web_search",
        "result": {"status": "failed"},
        "isError": True,
    }


def test_a_url_citation_is_a_source_only_when_the_search_listed_none() -> None:
    tools = [definition(openai_tools.web_search())]
    without = [p for p in stream(ev.web_search_response(), tools) if p["type"] == "source"]
    assert [(p["url"], p.get("title")) for p in without] == [("https://example.com/stepline", "Stepline")]
    listed = stream(ev.web_search_response(sources=["https://a.example/1"]), tools)
    assert [p["url"] for p in listed if p["type"] == "source"] == ["https://a.example/1"]
    # The citation is on the text either way.
    text_end = next(p for p in listed if p["type"] == "text-end")
    assert text_end["citations"][0]["source"]["url"] == "https://example.com/stepline"
    assert text_end["providerMetadata"]["openai"]["annotations"][0]["type"] == "url_citation"


def test_a_container_file_citation_is_a_document_source_at_once() -> None:
    annotation = {
        "type": "container_file_citation",
        "container_id": "cntr_1",
        "file_id": "cfile_1",
        "filename": "plot.png",
        "start_index": 0,
        "end_index": 4,
    }
    events = ev.message_events("msg_1", "Plot", [annotation], output_index=0)
    parts = stream([*events, {"type": "response.completed", "response": {"id": "r", "status": "completed"}}], [])
    source = next(p for p in parts if p["type"] == "source")
    assert parts.index(source) < next(i for i, p in enumerate(parts) if p["type"] == "text-end")
    assert source["sourceType"] == "document" and source["filename"] == "plot.png"
    assert source["providerMetadata"] == {
        "openai": {"type": "container_file_citation", "fileId": "cfile_1", "containerId": "cntr_1"}
    }


def test_a_partial_image_is_a_preliminary_result() -> None:
    parts = stream(ev.image_generation_response(), [definition(openai_tools.image_generation())])
    results = [p for p in parts if p["type"] == "tool-result"]
    assert [(p["result"]["result"], p.get("preliminary")) for p in results] == [
        (ev.PARTIAL_B64, True),
        (ev.IMAGE_B64, None),
    ]


# --- the next input ---------------------------------------------------------------------------------


def assistant_with_search(output: Any = None) -> AssistantModelMessage:
    value = output or JsonOutput(
        value={"action": {"type": "search", "query": "q"}, "sources": [{"type": "url", "url": "https://a"}]}
    )
    return AssistantModelMessage(
        content=[
            ToolCallPart(tool_call_id="ws_1", tool_name="search", input={}, provider_executed=True),
            ToolResultPart(tool_call_id="ws_1", tool_name="search", output=value),
            ModelTextPart(text="Found it."),
        ]
    )


def next_input(message: AssistantModelMessage, tool: Any, **openai: Any) -> tuple[list[Json], list[Any]]:
    options = ModelCallOptions(
        prompt=[HELLO, message], tools=[tool.definition()], provider_options={"openai": openai} if openai else {}
    )
    built = build_responses_request("gpt-4.1", options)
    return built.body["input"][1:], built.warnings


def test_a_stored_result_goes_back_as_a_reference() -> None:
    items, _ = next_input(assistant_with_search(), openai_tools.web_search(name="search"))
    assert items[0] == {"type": "item_reference", "id": "ws_1"}
    assert len([i for i in items if i.get("id") == "ws_1"]) == 1


def test_without_storage_a_search_is_rebuilt_and_other_results_are_left_out_with_a_warning() -> None:
    items, _ = next_input(assistant_with_search(), openai_tools.web_search(name="search"), store=False)
    assert items[0] == {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "q", "sources": [{"type": "url", "url": "https://a"}]},
    }
    code = AssistantModelMessage(
        content=[
            ToolCallPart(
                tool_call_id="ci_1", tool_name="code_interpreter", input={"code": "1"}, provider_executed=True
            ),
            ToolResultPart(tool_call_id="ci_1", tool_name="code_interpreter", output=JsonOutput(value={"outputs": []})),
        ]
    )
    items, warnings = next_input(code, openai_tools.code_interpreter(), store=False)
    assert items == []
    assert {
        "type": "other",
        "message": "Results for OpenAI tool code_interpreter are not sent to the API when store is false",
    } in warnings


def test_nothing_goes_back_in_a_conversation_or_for_a_denied_call() -> None:
    items, _ = next_input(assistant_with_search(), openai_tools.web_search(name="search"), conversation="conv_1")
    assert [i for i in items if i.get("id") == "ws_1" or i.get("type") == "item_reference"] == []
    items, _ = next_input(
        assistant_with_search(ExecutionDeniedOutput(reason="no")), openai_tools.web_search(name="search")
    )
    assert [i for i in items if i.get("type") == "item_reference"] == []


def test_outputs_keep_the_fields_the_sdk_keeps() -> None:
    # The SDK's schemas drop fields they do not name; a newer API field does not leak into the part.
    events = ev.code_interpreter_response()
    done = next(e for e in events if e["type"] == "response.output_item.done" and e["output_index"] == 0)
    done["item"]["outputs"] = [
        {"type": "logs", "logs": "ok", "truncated": False},
        {"type": "image", "url": "u", "x": 1},
    ]
    parts = stream(events, [definition(openai_tools.code_interpreter())])
    result = next(p for p in parts if p["type"] == "tool-result")
    assert result["result"] == {"outputs": [{"type": "logs", "logs": "ok"}, {"type": "image", "url": "u"}]}
