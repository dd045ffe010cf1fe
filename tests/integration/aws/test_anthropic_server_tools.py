"""Agents with Anthropic's server tools, on the durable path (the ASL on moto, the real `anthropic` SDK).

The fake Messages API streams a search (`server_tool_use`, `web_search_tool_result`) next to a
call of a Python tool, then a cited answer. Shown: the provider-executed call is never claimed
or run by Stepline (only the Python tool has a tool-call row, claimed once); the stored message
holds the search as a provider-executed tool part, its results as `source-url` parts and the
citation on the text; the next step and the next turn send the blocks back as Anthropic needs
them (`encrypted_content`, `encrypted_index` included). Then web fetch (with a document citation)
and code execution the same way, in one message; and a step whose process dies after the model
call is redone, so Anthropic is asked (and searches) again while the Python tool still runs once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stepline import Agent
from stepline.agent.loading import AgentSet
from stepline.llm.anthropic import tools as anthropic_tools
from stepline.llm.scripted import ScriptedModel
from stepline.local.workflow import SimulatedCrash
from stepline.runtime.turn import begin_turn
from tests.support import fake_anthropic as fa
from tests.support.anthropic_tool_streams import BASH_RESULT, DOC_CITATION, FETCHED, RESULTS, WEB_CITATION
from tests.support.local_aws import LocalAws, local_aws
from tests.support.runs import USER, Counted, final_message

WEATHER = Counted("weather", {"temperature": 18})
AGENT = Agent(
    name="researcher",
    model="anthropic:claude-sonnet-4-6",
    tools=[anthropic_tools.web_search(max_uses=2, blocked_domains=["spam.example"]), WEATHER.tool],
    max_retries=0,
)
STEP_ONE = fa.message(
    fa.server_tool_use_block(0, "srvtoolu_01", "web_search", '{"query": "paris weather"}'),
    fa.server_tool_result_block(1, "web_search_tool_result", "srvtoolu_01", RESULTS),
    fa.tool_use_block(2, "toolu_02", "weather", '{"city": "Paris"}'),
    stop_reason="tool_use",
    server_tool_use={"web_search_requests": 1, "web_fetch_requests": 0},
)
STEP_TWO = fa.message(fa.text_block(0, "Rain all week, 18 degrees.", citations=[WEB_CITATION]))
SEARCH_BLOCKS = [
    {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "paris weather"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": RESULTS},
]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[fa.FakeAnthropic]:
    with fa.FakeAnthropic() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
        WEATHER.runs = 0
        yield server


def turn(aws: LocalAws, run_id: str, text: str) -> dict[str, Any]:
    begin_turn(
        aws.services,
        USER,
        conversation_id="conv-search",
        run_id=run_id,
        assistant_message_id=f"a-{run_id}",
        user_message={"id": f"u-{run_id}", "role": "user", "parts": [{"type": "text", "text": text}]},
    )
    assert aws.wait_execution(run_id, timeout=60) == "SUCCEEDED"
    return final_message(aws, run_id)


def test_a_web_search_is_stored_never_claimed_and_sent_back_on_the_next_step_and_turn(fake: fa.FakeAnthropic) -> None:
    fake.reply(fa.StreamReply(STEP_ONE), fa.StreamReply(STEP_TWO), fa.StreamReply(fa.message(fa.text_block(0, "Ok."))))
    with local_aws(ScriptedModel(steps=[]), agents=AgentSet.single(AGENT)) as aws:
        message = turn(aws, "run-search-1", "Weather in Paris?")
        calls = aws.services.store.list_tool_calls(USER, "run-search-1")
        turn(aws, "run-search-2", "Thanks")

    # Stepline ran the Python tool once and never claimed the search.
    assert WEATHER.runs == 1
    assert [(call.tool_name, call.status) for call in calls] == [("weather", "success")]

    search = next(part for part in message["parts"] if part["type"] == "tool-web_search")
    assert (search["state"], search["providerExecuted"], search["input"]) == (
        "output-available",
        True,
        {"query": "paris weather"},
    )
    assert [result["encryptedContent"] for result in search["output"]] == [r["encrypted_content"] for r in RESULTS]
    # A source per search result, then (step two cites without searching) one for the citation, as the SDK does.
    urls = [part["url"] for part in message["parts"] if part["type"] == "source-url"]
    assert urls == [*(r["url"] for r in RESULTS), WEB_CITATION["url"]]
    answer = next(part for part in message["parts"] if part["type"] == "text")
    assert answer["providerMetadata"] == {"anthropic": {"citations": [WEB_CITATION]}}
    assert message["content"] == "Rain all week, 18 degrees."

    first, second, third = (request.body for request in fake.requests)
    assert first["tools"][0] == {
        "type": "web_search_20250305",
        "name": "web_search",
        "max_uses": 2,
        "blocked_domains": ["spam.example"],
    }
    assert "anthropic-beta" not in fake.requests[0].headers  # web search needs no beta
    # The next step: the search and its results in the assistant turn, before the Python call.
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [
        *SEARCH_BLOCKS,
        {"type": "tool_use", "id": "toolu_02", "name": "weather", "input": {"city": "Paris"}},
    ]
    assert second["messages"][2]["content"][0]["type"] == "tool_result"
    # The next turn: the same blocks again, and the answer with its citation (encrypted_index kept).
    assert third["messages"][1]["content"][:2] == SEARCH_BLOCKS
    cited = next(block for message in third["messages"] for block in message["content"] if "citations" in block)
    assert cited == {"type": "text", "text": "Rain all week, 18 degrees.", "citations": [WEB_CITATION]}


FETCH_AGENT = Agent(
    name="reader",
    model="anthropic:claude-sonnet-4-6",
    tools=[anthropic_tools.web_fetch(citations=True), anthropic_tools.code_execution()],
    max_retries=0,
)
FETCH_AND_RUN = fa.message(
    fa.server_tool_use_block(0, "srvtoolu_02", "web_fetch", '{"url": "https://docs.example/loop"}'),
    fa.server_tool_result_block(1, "web_fetch_tool_result", "srvtoolu_02", FETCHED),
    fa.server_tool_use_block(2, "srvtoolu_04", "bash_code_execution", '{"command": "python a.py"}'),
    fa.server_tool_result_block(3, "bash_code_execution_tool_result", "srvtoolu_04", BASH_RESULT),
    fa.text_block(4, "One step per invocation.", citations=[DOC_CITATION]),
)


def test_web_fetch_and_code_execution_are_stored_and_sent_back_on_the_next_turn(fake: fa.FakeAnthropic) -> None:
    fake.reply(fa.StreamReply(FETCH_AND_RUN), fa.StreamReply(fa.message(fa.text_block(0, "Ok."))))
    with local_aws(ScriptedModel(steps=[]), agents=AgentSet.single(FETCH_AGENT)) as aws:
        message = turn(aws, "run-fetch-1", "What does the loop page say?")
        calls = aws.services.store.list_tool_calls(USER, "run-fetch-1")
        turn(aws, "run-fetch-2", "Thanks")

    assert calls == []  # neither is Stepline's to claim
    tools = {part["toolCallId"]: part for part in message["parts"] if part["type"].startswith("tool-")}
    fetch, bash = tools["srvtoolu_02"], tools["srvtoolu_04"]
    assert (fetch["type"], fetch["providerExecuted"], fetch["output"]["content"]["source"]["data"]) == (
        "tool-web_fetch",
        True,
        FETCHED["content"]["source"]["data"],
    )
    assert (bash["type"], bash["input"], bash["output"]) == (
        "tool-code_execution",
        {"type": "bash_code_execution", "command": "python a.py"},
        BASH_RESULT,
    )
    (document,) = [part for part in message["parts"] if part["type"] == "source-document"]
    assert (document["title"], document["mediaType"]) == ("The agent loop", "text/plain")

    first, second = fake.requests
    assert first.headers["anthropic-beta"] == "web-fetch-2025-09-10,code-execution-2025-08-25"
    assert second.body["messages"][1]["content"] == [
        {
            "type": "server_tool_use",
            "id": "srvtoolu_02",
            "name": "web_fetch",
            "input": {"url": "https://docs.example/loop"},
        },
        {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_02", "content": FETCHED},
        {
            "type": "server_tool_use",
            "id": "srvtoolu_04",
            "name": "bash_code_execution",
            "input": {"command": "python a.py"},
        },
        {"type": "bash_code_execution_tool_result", "tool_use_id": "srvtoolu_04", "content": BASH_RESULT},
        {"type": "text", "text": "One step per invocation.", "citations": [DOC_CITATION]},
    ]


class Crash(SimulatedCrash):
    """The step's process dies (Step Functions sees `Lambda.Unknown` and retries the step)."""

    lambda_error_type = "Lambda.Unknown"


class DiesAtFirstClaim:
    """The real store; the first tool claim kills the step: after the model call, before it is saved."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.crashed = False

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if name != "claim_tool_call":
            return attribute

        def claim(*args: Any, **kwargs: Any) -> Any:
            if not self.crashed:
                self.crashed = True
                raise Crash("process died after the model call")
            return attribute(*args, **kwargs)

        return claim


def test_a_step_redone_after_a_crash_asks_anthropic_again_and_runs_the_python_tool_once(
    fake: fa.FakeAnthropic,
) -> None:
    fake.reply(fa.StreamReply(STEP_ONE), fa.StreamReply(STEP_ONE), fa.StreamReply(STEP_TWO))
    with local_aws(ScriptedModel(steps=[]), agents=AgentSet.single(AGENT)) as aws:
        store = DiesAtFirstClaim(aws.services.store)
        aws.services.store = store  # type: ignore[assignment]
        message = turn(aws, "run-search-crash", "Weather in Paris?")
        history = [event["type"] for event in aws.workflow.history("run-search-crash")]

    assert store.crashed and "TaskFailed" in history  # the step really died and was retried
    first, again, _ = (request.body for request in fake.requests)
    assert again == first  # the redone step sent the same request: Anthropic searched twice
    assert WEATHER.runs == 1  # Stepline's own tool ran once
    searches = [part for part in message["parts"] if part["type"] == "tool-web_search"]
    assert len(searches) == 1 and searches[0]["state"] == "output-available"  # the redone step's, once
