"""Spec 000 sub-flow 3 on the state machine, with the faults at the provider's wire.

The real ASL on moto, the real `anthropic` and `openai` SDKs against the fake servers. Each run
calls a counted tool in step one, then step two meets a fault: a failure before anything visible
is retried (inside the step, or by Step Functions) and lands in `metadata.retries`; a failure
after visible text is not retried at all: the partial text stays and the run records the error.
The tool body runs exactly once either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from stepline.llm.anthropic import AnthropicModel
from stepline.llm.base import LanguageModel
from stepline.llm.openai import OpenAIResponsesModel
from stepline.store.replay import chunks_of
from tests.support import fake_anthropic as fa
from tests.support import fake_openai as fo
from tests.support.local_aws import local_aws
from tests.support.runs import USER, Counted, begin, final_message

PROVIDER_TEXT = "upstream-detail-7f3a"
"""Text only the fake's error bodies carry: it must not reach the execution history."""


@dataclass
class Provider:
    """One fake provider: its model, how to script a reply, and how many requests it got."""

    model: LanguageModel
    reply: Callable[..., None]
    requests: Callable[[], int]


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any, Provider]]:
    if request.param == "anthropic":
        with fa.FakeAnthropic() as fake:
            model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test-key-0123456789", base_url=fake.base_url)
            yield "anthropic", fake, Provider(model, fake.reply, lambda: len(fake.requests))
    else:
        with fo.FakeOpenAI() as fake:
            model = OpenAIResponsesModel("gpt-4.1", base_url=fake.base_url, api_key=fo.API_KEY)
            yield "openai", fake, Provider(model, fake.responses, lambda: len(fake.requests_to(fo.RESPONSES_PATH)))


# --- the replies, in each provider's wire format ---------------------------------------------------

ANTHROPIC_TOOL = fa.StreamReply(
    fa.message(fa.tool_use_block(0, "toolu_1", "weather", '{"city":', '"Paris"}'), stop_reason="tool_use")
)
ANTHROPIC_TEXT = fa.message(fa.text_block(0, "Sun", "ny."))  # start, ping, block start, "Sun", "ny.", …
ANTHROPIC_FAULTS: dict[str, Any] = {
    "drop before text": fa.StreamReply(ANTHROPIC_TEXT, drop_after=2),  # before the text block opens
    "drop after text": fa.StreamReply(ANTHROPIC_TEXT, drop_after=4),
    "in-stream overload": fa.StreamReply([fa.message_start(), fa.ping(), fa.error_event("overloaded_error", "busy")]),
    "429 retry-after": fa.ErrorReply(429, "rate_limit_error", PROVIDER_TEXT, {"retry-after": "1"}),
    "500": fa.ErrorReply(500, "api_error", PROVIDER_TEXT),
}


def _openai_tool() -> fo.Reply:
    item = {"id": "fc_1", "type": "function_call", "status": "in_progress", "call_id": "call_1", "name": "weather"}
    base = {"item_id": "fc_1", "output_index": 0}
    response = {"id": "resp_0", "object": "response", "created_at": 1_700_000_000, "model": "gpt-4.1"}
    arguments = '{"city":"Paris"}'
    return fo.responses_stream(
        [
            {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}},
            {"type": "response.output_item.added", "output_index": 0, "item": {**item, "arguments": ""}},
            {"type": "response.function_call_arguments.delta", **base, "delta": arguments},
            {"type": "response.function_call_arguments.done", **base, "arguments": arguments},
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {**item, "status": "completed", "arguments": arguments},
            },
            {"type": "response.completed", "response": {**response, "status": "completed", "output": []}},
        ]
    )


OPENAI_TEXT = fo.responses_text_events("Sunny.")  # created, in_progress, item, part, "Sun", "ny.", …
_FAILED = {"id": "resp_1", "object": "response", "created_at": 1_700_000_000, "model": "gpt-4.1", "status": "failed"}
OPENAI_FAULTS: dict[str, Any] = {
    "drop before text": fo.responses_stream(OPENAI_TEXT, drop_after=2),  # before the message item
    "drop after text": fo.responses_stream(OPENAI_TEXT, drop_after=5),
    "in-stream overload": fo.responses_stream(
        [
            OPENAI_TEXT[0],
            {
                "type": "response.failed",
                "response": {**_FAILED, "error": {"code": "server_is_overloaded", "message": PROVIDER_TEXT}},
            },
        ]
    ),
    "429 retry-after": fo.error_reply(
        429, PROVIDER_TEXT, code="rate_limit_exceeded", error_type="requests", headers={"retry-after": "1"}
    ),
    "500": fo.error_reply(500, PROVIDER_TEXT),
}

RETRY_REASONS = {
    "drop before text": "connection",
    "in-stream overload": "overloaded",
    "429 retry-after": "rate limit (429)",
    "500": "server (500)",
}


PAYLOAD_KEYS = {
    "userId",
    "runId",
    "next",
    "steps",
    "retryable",
    "error",
    "status",
    "waiting",
    "waitSeconds",
    "firstOutputMs",
    "watched",  # a flag: whether anyone followed the step (the Route picks the next step's function)
}


def assert_ids_only(history: list[dict[str, Any]]) -> None:
    """The workers' replies in the history carry ids, tags and codes; a failed task a fixed sentence."""
    for event in history:
        if event["type"] == "TaskSucceeded":
            payload = json.loads(event["taskSucceededEventDetails"]["output"])["Payload"]
            assert set(payload) <= PAYLOAD_KEYS, payload
            assert set(payload.get("error", {})) <= {"code"}, payload
            assert isinstance(payload.get("watched", False), bool), payload
        if event["type"] == "TaskFailed":
            cause = json.loads(event["taskFailedEventDetails"]["cause"])
            assert cause["errorMessage"].startswith("the model call failed before any output ("), cause
    assert PROVIDER_TEXT not in json.dumps(history, default=str)


def _script(name: str, provider: Provider, fault: str, *, then_text: bool) -> None:
    if name == "anthropic":
        answer: list[Any] = [fa.StreamReply(ANTHROPIC_TEXT)] if then_text else []
        provider.reply(ANTHROPIC_TOOL, ANTHROPIC_FAULTS[fault], *answer)
    else:
        answer = [fo.responses_stream(OPENAI_TEXT)] if then_text else []
        provider.reply(_openai_tool(), OPENAI_FAULTS[fault], *answer)


@pytest.mark.parametrize("fault", list(RETRY_REASONS))
def test_a_fault_before_visible_output_is_retried_and_recorded(provider: tuple[str, Any, Provider], fault: str) -> None:
    name, _, fake = provider
    weather = Counted("weather", {"temperature": 18})
    _script(name, fake, fault, then_text=True)
    with local_aws(fake.model, tools=[weather.tool]) as aws:
        run_id = begin(aws)
        status = aws.wait_execution(run_id, timeout=60)
        assert status == "SUCCEEDED", aws.services.store.get_run(USER, run_id).error
        message = final_message(aws, run_id)
        assert weather.runs == 1
        assert fake.requests() == 3  # the tool step, the fault, the retry
        assert message["status"] == "completed" and message["content"] == "Sunny."
        retries = message["metadata"]["retries"]
        assert [(r["reason"], r["attempt"]) for r in retries] == [(RETRY_REASONS[fault], 1)]
        assert isinstance(retries[0]["at"], int)
        assert_ids_only(aws.workflow.history(run_id))


def test_a_fault_after_visible_text_keeps_the_partial_text_and_is_not_retried(
    provider: tuple[str, Any, Provider],
) -> None:
    name, _, fake = provider
    weather = Counted("weather", {"temperature": 18})
    _script(name, fake, "drop after text", then_text=False)
    with local_aws(fake.model, tools=[weather.tool]) as aws:
        run_id = begin(aws)
        assert aws.wait_execution(run_id, timeout=60) == "FAILED"
        assert weather.runs == 1
        assert fake.requests() == 2  # no retry: neither in the step nor by Step Functions
        history = aws.workflow.history(run_id)
        assert "TaskFailed" not in [e["type"] for e in history]
        assert_ids_only(history)
        message = final_message(aws, run_id)
        assert message["status"] == "failed" and message["content"] == "Sun"
        last = message["parts"][-1]
        assert (last["type"], last["text"]) == ("text", "Sun")
        error = message["metadata"]["error"]
        assert error["code"] == "connection" and "Error" not in error["message"]  # no class names
        assert "retries" not in message["metadata"]
        run = aws.services.store.get_run(USER, run_id)
        assert run.status == "failed" and run.error is not None and run.error["message"] == error["message"]
        kinds = [c["type"] for c in chunks_of(aws.services.store.events_after(USER, run_id, 0, now=0))]
        assert "reset-step" not in kinds and kinds[-1] == "error"


def test_step_functions_retries_a_step_whose_in_step_retries_are_spent(
    provider: tuple[str, Any, Provider],
) -> None:
    name, _, fake = provider
    weather = Counted("weather", {"temperature": 18})
    _script(name, fake, "500", then_text=True)
    with local_aws(fake.model, tools=[weather.tool], max_retries=0) as aws:
        run_id = begin(aws)
        assert aws.wait_execution(run_id, timeout=60) == "SUCCEEDED"
        assert weather.runs == 1 and fake.requests() == 3
        message = final_message(aws, run_id)
        assert [(r["reason"], r["attempt"]) for r in message["metadata"]["retries"]] == [("server; step retried", 1)]
        history = aws.workflow.history(run_id)
        assert [e["type"] for e in history].count("TaskFailed") == 1
        # the state machine's payloads carry ids and codes: no provider text, no class of ours
        assert_ids_only(history)
        assert "ModelCallError" not in json.dumps(history, default=str)
