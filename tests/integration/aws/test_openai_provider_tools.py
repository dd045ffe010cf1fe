"""OpenAI's built-in tools through the durable path, checked against the real AI SDK.

For each tool the fake Responses server streams the API's own events (tests/support/
openai_tool_events.py). The same stream is given to `ai@7` + `@ai-sdk/openai` (streamText with
`createOpenAI({baseURL: fake})`, `toUIMessageStream`) and to a Stepline run on the local AWS
(moto, the real state machine, the real `openai` SDK). Then:

- the UI chunks in Stepline's event log are the SDK's (source ids aside: both are random);
- the request carried the same `tools` and `include` as the SDK's;
- the stored message holds the provider-executed tool part, and is what ai@7's `readUIMessageStream`
  makes of the chunks Stepline sent;
- a generated image is an artifact in S3: the event log and the message carry its reference;
- the next turn sends the tool's output item back as the SDK does for the same stored message
  (an `item_reference` to the call's item), and nothing ran the tool on Stepline's side.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from stepline.llm.openai import OpenAIResponsesModel
from stepline.llm.openai import tools as openai_tools
from stepline.local.workflow import SimulatedCrash
from stepline.loop.tools import Tool
from stepline.runtime.turn import begin_turn
from stepline.store.replay import chunks_of
from tests.support import fake_openai as fo
from tests.support import openai_tool_events as ev
from tests.support.local_aws import LocalAws, local_aws
from tests.support.runs import USER, final_message
from tests.support.sdk_oracle import SdkOracle

Json = dict[str, Any]


@dataclass(frozen=True)
class Case:
    tool: Callable[[], Tool]
    spec: Json
    """The same tool for the SDK: `{id, args}` of `openai.tools.*`."""
    events: Callable[[], list[Json]]
    call_id: str


CASES: dict[str, Case] = {
    "web_search": Case(
        lambda: openai_tools.web_search(
            allowed_domains=["example.com"],
            user_location=openai_tools.UserLocation(country="GB", city="London"),
            search_context_size="low",
        ),
        {
            "id": "openai.web_search",
            "args": {
                "filters": {"allowedDomains": ["example.com"]},
                "userLocation": {"type": "approximate", "country": "GB", "city": "London"},
                "searchContextSize": "low",
            },
        },
        lambda: ev.web_search_response(sources=["https://example.com/a", "https://example.com/b"]),
        "ws_1",
    ),
    "file_search": Case(
        lambda: openai_tools.file_search(["vs_1"], max_num_results=5, score_threshold=0.5),
        {
            "id": "openai.file_search",
            "args": {"vectorStoreIds": ["vs_1"], "maxNumResults": 5, "ranking": {"scoreThreshold": 0.5}},
        },
        ev.file_search_response,
        "fs_1",
    ),
    "code_interpreter": Case(
        lambda: openai_tools.code_interpreter(container=openai_tools.CodeInterpreterContainer(memory_limit="4g")),
        {"id": "openai.code_interpreter", "args": {"container": {"memoryLimit": "4g"}}},
        ev.code_interpreter_response,
        "ci_1",
    ),
    "image_generation": Case(
        lambda: openai_tools.image_generation(size="1024x1024", quality="low", partial_images=1),
        {"id": "openai.image_generation", "args": {"size": "1024x1024", "quality": "low", "partialImages": 1}},
        ev.image_generation_response,
        "ig_1",
    ),
}


_DELTAS = {"text-delta": ("id", "delta"), "tool-input-delta": ("toolCallId", "inputTextDelta")}


def normalise(chunks: list[Json]) -> list[Json]:
    """Source ids renamed in order of appearance; the run's message id and metadata left out.

    Consecutive deltas of one part are joined: the event log batches what arrives together, so
    how a text or an input is split into deltas is not part of what is compared.
    """
    names: dict[str, str] = {}
    out: list[Json] = []
    for chunk in chunks:
        chunk = {key: value for key, value in chunk.items() if key not in ("messageMetadata", "messageId")}
        if "sourceId" in chunk:
            chunk["sourceId"] = names.setdefault(chunk["sourceId"], f"source-{len(names) + 1}")
        delta = _DELTAS.get(chunk["type"])
        if delta is not None and out and out[-1]["type"] == chunk["type"] and out[-1][delta[0]] == chunk[delta[0]]:
            out[-1] = {**out[-1], delta[1]: out[-1][delta[1]] + chunk[delta[1]]}
            continue
        out.append(chunk)
    return out


def turn(aws: LocalAws, number: int, text: str) -> tuple[Json, list[Json]]:
    """Run one turn of conversation `conv`; its stored assistant message and its UI chunks."""
    run_id = f"run-{number}"
    begin_turn(
        aws.services,
        USER,
        conversation_id="conv",
        run_id=run_id,
        assistant_message_id=f"a-{number}",
        user_message={"id": f"u-{number}", "role": "user", "parts": [{"type": "text", "text": text}]},
    )
    assert aws.wait_execution(run_id, timeout=60) == "SUCCEEDED", aws.services.store.get_run(USER, run_id).error
    chunks = list(chunks_of(aws.services.store.events_after(USER, run_id, 0, now=aws.services.clock())))
    return final_message(aws, run_id), chunks


def stored_image_chunks(chunks: list[Json], stored: Json, aws: LocalAws) -> list[Json]:
    """The SDK's chunks as the durable path sends them: the image is an artifact, previews are not sent.

    Checks the artifact on the way: the message's output names it, and its file holds the image.
    """
    part = next(p for p in stored["parts"] if p["type"] == "tool-image_generation")
    reference = part["output"]
    assert set(reference) == {"artifactId", "title", "url", "mediaType"}
    assert reference["mediaType"] == "image/png" and reference["url"] == f"/api/artifacts/{reference['artifactId']}"
    artifact = aws.services.store.get_artifact(USER, reference["artifactId"])
    assert (artifact.message_id, artifact.tool_call_id, artifact.type) == (stored["message_id"], "ig_1", "file")
    assert artifact.storage_key is not None
    assert aws.services.blobs is not None
    assert aws.services.blobs.get_object(artifact.storage_key) == base64.b64decode(ev.IMAGE_B64)
    outputs = [c for c in chunks if c["type"] == "tool-output-available"]
    assert [c["output"]["result"] for c in outputs] == [ev.PARTIAL_B64, ev.IMAGE_B64]
    return [{**c, "output": reference} if c is outputs[-1] else c for c in chunks if c is not outputs[0]]


def tool_items(items: list[Json], call_id: str) -> list[Json]:
    return [item for item in items if item.get("id") == call_id]


@pytest.mark.parametrize("name", list(CASES))
def test_a_provider_tool_streams_stores_and_goes_back_like_the_sdk(sdk: SdkOracle, name: str) -> None:
    case = CASES[name]
    with fo.FakeOpenAI() as fake:
        fake.responses(fo.responses_stream(case.events()))
        expected = sdk.call(
            "openaiStream", baseURL=fake.base_url, apiKey=fo.API_KEY, tools={name: case.spec}, prompt="hello"
        )
        assert expected["errors"] == []
        sdk_request = fake.last_body(fo.RESPONSES_PATH)

        answer = fo.responses_text_events("Done.", response_id="resp_2", item_id="msg_2")
        fake.responses(fo.responses_stream(case.events()), fo.responses_stream(answer))
        model = OpenAIResponsesModel("gpt-4.1", base_url=fake.base_url, api_key=fo.API_KEY)
        with local_aws(model, tools=[case.tool()]) as aws:
            stored, chunks = turn(aws, 1, "hello")
            first_request = fake.last_body(fo.RESPONSES_PATH)
            # OpenAI ran the tool: Stepline claimed nothing (no tool-call record to redo or reuse).
            assert aws.services.store.list_tool_calls(USER, "run-1") == []
            _, _ = turn(aws, 2, "and then?")
            next_request = fake.last_body(fo.RESPONSES_PATH)
            if name == "image_generation":
                expected["chunks"] = stored_image_chunks(expected["chunks"], stored, aws)

        # 1. The UI chunks are the SDK's.
        assert normalise(chunks) == normalise(expected["chunks"])
        # 2. The tool went out as the SDK sends it.
        assert first_request["tools"] == sdk_request["tools"]
        assert first_request.get("include") == sdk_request.get("include")
        # No generated image travels through the event log or the stored message.
        assert ev.IMAGE_B64 not in json.dumps(chunks) and ev.PARTIAL_B64 not in json.dumps(stored)
        # 3. The stored message is what ai@7 makes of the chunks Stepline sent.
        reduced = sdk.call("reduce", chunks=chunks)
        assert reduced["errors"] == [] and reduced["final"]["parts"] == stored["parts"]
        # The stored message holds the provider-executed call and its final output.
        tool_parts = [p for p in stored["parts"] if p["type"] == f"tool-{name}"]
        final_output = [c for c in expected["chunks"] if c["type"] == "tool-output-available"][-1]["output"]
        assert len(tool_parts) == 1
        assert tool_parts[0]["toolCallId"] == case.call_id
        assert tool_parts[0]["state"] == "output-available" and tool_parts[0]["providerExecuted"] is True
        assert tool_parts[0]["output"] == final_output
        # 4. The next turn sends the call's item back by reference, as the SDK does for the same message.
        history = [
            {"id": "u-1", "role": "user", "parts": [{"type": "text", "text": "hello"}]},
            {"id": stored["message_id"], "role": "assistant", "parts": stored["parts"]},
            {"id": "u-2", "role": "user", "parts": [{"type": "text", "text": "and then?"}]},
        ]
        fake.responses(fo.responses_stream(answer))
        sdk.call(
            "openaiStream",
            baseURL=fake.base_url,
            apiKey=fo.API_KEY,
            tools={name: case.spec},
            messages=sdk.call("convert", messages=history),
        )
        sdk_next = fake.last_body(fo.RESPONSES_PATH)
        reference = [{"type": "item_reference", "id": case.call_id}]
        assert tool_items(next_request["input"], case.call_id) == reference
        assert tool_items(sdk_next["input"], case.call_id) == reference
        assert next_request["input"][1] == reference[0]  # right after the first user message, as OpenAI ordered it
        fake.assert_all_consumed()


class _Crash(SimulatedCrash):
    """The step's process dying: Step Functions sees `Lambda.Unknown` and redoes the step."""

    lambda_error_type = "Lambda.Unknown"


class _CrashBeforeSave:
    """The real store; the first `save_step` dies before it writes (the step streamed, nothing saved)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.crashed = False

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if name != "save_step" or self.crashed:
            return attribute

        def crash(*args: Any, **kwargs: Any) -> Any:
            self.crashed = True
            raise _Crash("process died before the step was saved")

        return crash


def test_a_step_redone_after_a_crash_asks_the_provider_again_and_keeps_one_result() -> None:
    """docs/loop.md: the provider may run its tool again; the message still has one tool part."""
    with fo.FakeOpenAI() as fake:
        fake.responses(*(fo.responses_stream(ev.image_generation_response()) for _ in range(2)))
        model = OpenAIResponsesModel("gpt-4.1", base_url=fake.base_url, api_key=fo.API_KEY)
        with local_aws(model, tools=[CASES["image_generation"].tool()]) as aws:
            faulty = _CrashBeforeSave(aws.services.store)
            aws.services.store = faulty  # type: ignore[assignment]
            stored, chunks = turn(aws, 1, "draw")
            assert faulty.crashed
            # The redone step called the model again, and OpenAI generated the image again.
            assert len(fake.requests_to(fo.RESPONSES_PATH)) == 2
            assert "reset-step" in [c["type"] for c in chunks]
            tool_parts = [p for p in stored["parts"] if p["type"] == "tool-image_generation"]
            assert len(tool_parts) == 1 and tool_parts[0]["state"] == "output-available"
            # The same item stored twice is one artifact.
            artifacts = aws.services.store.list_message_artifacts(USER, stored["message_id"])
            assert [a.artifact_id for a in artifacts] == [tool_parts[0]["output"]["artifactId"]]
            assert aws.services.store.list_tool_calls(USER, "run-1") == []
        fake.assert_all_consumed()


def _search_then_function_call() -> list[Json]:
    """One response: a web search (output 0), then a call of the function tool `weather` (output 1)."""
    search = ev.web_search_response(sources=["https://example.com/a"])
    tool_items = [e for e in search if e.get("output_index") == 0 or e.get("item_id") == "ws_1"]
    item = {"id": "fc_1", "type": "function_call", "status": "in_progress", "call_id": "call_1", "name": "weather"}
    arguments = '{"city":"Paris"}'
    call = [
        {"type": "response.output_item.added", "output_index": 1, "item": {**item, "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": arguments},
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1, "arguments": arguments},
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": {**item, "status": "completed", "arguments": arguments},
        },
    ]
    return [search[0], search[1], *tool_items, *call, search[-1]]


def test_the_next_step_of_a_run_sends_the_search_back_before_the_function_call_like_the_sdk(sdk: SdkOracle) -> None:
    weather = Tool(name="weather", input_schema={"type": "object"}, execute=lambda _: {"temperature": 18})
    answer = fo.responses_text_events("18 degrees.", response_id="resp_2", item_id="msg_2")
    tools = {
        "web_search": {"id": "openai.web_search", "args": {}},
        "weather": {"kind": "returns", "value": {"temperature": 18}},
    }
    with fo.FakeOpenAI() as fake:
        fake.responses(fo.responses_stream(_search_then_function_call()), fo.responses_stream(answer))
        expected = sdk.call(
            "openaiStream", baseURL=fake.base_url, apiKey=fo.API_KEY, tools=tools, prompt="hello", stopSteps=2
        )
        assert expected["errors"] == []
        sdk_second = fake.last_body(fo.RESPONSES_PATH)["input"]

        fake.responses(fo.responses_stream(_search_then_function_call()), fo.responses_stream(answer))
        model = OpenAIResponsesModel("gpt-4.1", base_url=fake.base_url, api_key=fo.API_KEY)
        with local_aws(model, tools=[openai_tools.web_search(), weather], max_steps=2) as aws:
            stored, chunks = turn(aws, 1, "hello")
        ours_second = fake.last_body(fo.RESPONSES_PATH)["input"]
        fake.assert_all_consumed()

    # Not about provider tools, left as it is: for the function call the SDK puts the call's
    # `providerMetadata` on the output chunk, Stepline on the input chunk.
    def without_call_metadata(chunks: list[Json]) -> list[Json]:
        return [
            {k: v for k, v in c.items() if not (k == "providerMetadata" and c.get("toolCallId") == "call_1")}
            for c in chunks
        ]

    assert normalise(without_call_metadata(chunks)) == normalise(without_call_metadata(expected["chunks"]))

    # The search goes back by reference, then the function call and its output, as the SDK sends them.
    def tool_items_of(items: list[Json]) -> list[Json]:
        return [
            {k: v for k, v in i.items() if k != "id" or i["type"] == "item_reference"}
            for i in items
            if i.get("type") in ("item_reference", "function_call", "function_call_output") and i.get("id") != "msg_ws"
        ]

    assert tool_items_of(ours_second) == tool_items_of(sdk_second)
    assert tool_items_of(ours_second)[0] == {"type": "item_reference", "id": "ws_1"}
    assert [p["type"] for p in stored["parts"] if p["type"].startswith("tool-")] == ["tool-web_search", "tool-weather"]
