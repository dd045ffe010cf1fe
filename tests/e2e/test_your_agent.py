"""A team's own agent, in a module outside Stepline's tree, run by `stepline dev` and `stepline run`.

The agent (`AGENT` below, written to a temporary project) has dynamic instructions from the run
context, sampling settings, headers, provider options and two `@tool` functions, one gated by an
approval. Its model is `openai:gpt-4.1-mini`, served by a local server speaking the Responses wire
format (`tests/support/fake_openai.py`). The real `ai@7` client (`tests/node/chat_e2e.mjs`) chats
with a `stepline dev` process started in the project directory, as a user would. What is checked is
what crossed the wire: every model request carries the agent's instructions (with the context the
run fixed at its start, also after the approval resumed it), its settings and the tools' inferred
names, descriptions and schemas; the tools' real outputs and the answer reach the client.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from stepline.agent.definition import Agent
from tests.support.fake_openai import (
    API_KEY,
    RESPONSES_PATH,
    FakeOpenAI,
    error_reply,
    responses_stream,
    responses_text_events,
)
from tests.support.node_script import run_node_script

SHARED = Path(__file__).resolve().parents[2] / "shared"

AGENT = '''
from typing import Annotated, Literal

from pydantic import Field

from stepline import Agent, RunContext, is_step_count, tool


@tool
def lookup_order(
    order_id: Annotated[str, Field(description="The order number, such as A-1")],
    context: RunContext,
    detail: Literal["short", "full"] = "short",
) -> dict:
    """Look up an order by its number."""
    return {"orderId": order_id, "status": "shipped", "customer": context.user_id, "plan": context.body.get("plan")}


@tool(approval="user-approval")
async def issue_refund(order_id: str, cents: int, context: RunContext) -> dict:
    """Refund part of an order.

    Args:
        order_id: The order to refund.
        cents: How much, in cents.
    """
    return {"refunded": cents, "orderId": order_id, "approvedFor": context.claims.get("sub")}


def instructions(context: RunContext) -> str:
    return f"You are Acme's support agent. The customer is {context.user_id} on the {context.body.get('plan')} plan."


agent = Agent(
    name="support",
    description="Acme customer support",
    model="openai:gpt-4.1-mini",
    instructions=instructions,
    tools=[lookup_order, issue_refund],
    temperature=0.3,
    top_p=0.9,
    max_output_tokens=321,
    headers={"x-team": "acme"},
    provider_options={"openai": {"user": "acme-support"}},
    stop_when=is_step_count(5),
)
'''
USER = "local-user"
USAGE = {"input_tokens": 9, "output_tokens": 3}


def _function_call(call_id: str, name: str, arguments: dict[str, Any], response_id: str) -> list[dict[str, Any]]:
    response = {"id": response_id, "object": "response", "created_at": 1_700_000_000, "model": "gpt-4.1-mini"}
    text = json.dumps(arguments)
    item = {"id": f"fc_{call_id}", "type": "function_call", "status": "in_progress", "call_id": call_id, "name": name}
    base = {"item_id": item["id"], "output_index": 0}
    return [
        {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "arguments": ""}},
        {"type": "response.function_call_arguments.delta", **base, "delta": text},
        {"type": "response.function_call_arguments.done", **base, "arguments": text},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "status": "completed", "arguments": text},
        },
        {
            "type": "response.completed",
            "response": {
                **response,
                "status": "completed",
                "output": [],
                "usage": {"input_tokens": 9, "output_tokens": 3},
            },
        },
    ]


def script(fake: FakeOpenAI) -> None:
    fake.responses(
        error_reply(400, "Missing required parameter: 'model'.", code="missing_required_parameter"),  # the API probe
        responses_stream(_function_call("call_look", "lookup_order", {"order_id": "A-1"}, "resp_1")),
        responses_stream(_function_call("call_refund", "issue_refund", {"order_id": "A-1", "cents": 500}, "resp_2")),
        responses_stream(responses_text_events("Refund issued.", response_id="resp_3", model="gpt-4.1-mini")),
    )


def expected_tools(project: Path) -> list[dict[str, Any]]:
    """The tool definitions the project's `@tool` functions infer (what the model must be told)."""
    spec = importlib.util.spec_from_file_location("support_agent_under_test", project / "support_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    agent: Agent = module.agent
    tools = [{"name": t.name, "description": t.description, "parameters": t.input_schema} for t in agent.tools]
    assert tools[0]["parameters"]["properties"]["order_id"]["description"] == "The order number, such as A-1"
    assert tools[1]["description"] == "Refund part of an order."  # the docstring, without its Args section
    assert tools[1]["parameters"]["properties"]["cents"]["description"] == "How much, in cents."
    return tools


def assert_requests_carry_the_agent(fake: FakeOpenAI, project: Path, plan: str) -> None:
    calls = [r for r in fake.requests_to(RESPONSES_PATH) if r.body]  # the probe's body is {}
    assert len(calls) == 3
    instructions = f"You are Acme's support agent. The customer is {USER} on the {plan} plan."
    for request in calls:
        body = request.body
        assert body["model"] == "gpt-4.1-mini"
        assert body["input"][0] == {"role": "system", "content": instructions}
        assert (body["temperature"], body["top_p"], body["max_output_tokens"]) == (0.3, 0.9, 321)
        assert body["user"] == "acme-support"
        assert request.headers.get("x-team") == "acme"
        sent = [{k: t.get(k) for k in ("name", "description", "parameters")} for t in body["tools"]]
        assert sent == expected_tools(project)
    # the approved call ran in a later step (another invocation), with the context fixed at the start
    outputs = [i for i in calls[2].body["input"] if isinstance(i, dict) and i.get("type") == "function_call_output"]
    refund = json.loads(next(o["output"] for o in outputs if o["call_id"] == "call_refund"))
    assert refund == {"refunded": 500, "orderId": "A-1", "approvedFor": USER}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def environment(fake: FakeOpenAI, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPLINE_", "OPENAI_", "ANTHROPIC_"))}
    env.update(
        STEPLINE_AGENT="support_agent:agent",
        OPENAI_API_KEY=API_KEY,
        OPENAI_BASE_URL=fake.base_url,
        PYTHONPATH=str(SHARED),
        **extra,
    )
    return env


@contextmanager
def stepline_dev(project: Path, env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    log = project / "stepline-dev.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "stepline.cli", "dev", "--port", str(port)],
            cwd=project,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(f"{url}/api/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "stepline dev did not start"
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()


def test_the_real_client_chats_with_a_users_agent_module_on_stepline_dev(tmp_path: Path) -> None:
    project = tmp_path / "acme"
    project.mkdir()
    (project / "support_agent.py").write_text(AGENT)
    with FakeOpenAI() as fake, stepline_dev(project, environment(fake)) as url:
        script(fake)
        agents = httpx.get(f"{url}/api/agents").json()
        assert agents["default"] == "support"
        (listed,) = agents["agents"]
        assert listed["model"] == "openai:gpt-4.1-mini" and listed["description"] == "Acme customer support"
        assert [(t["name"], t["approval"]) for t in listed["tools"]] == [
            ("lookup_order", "none"),
            ("issue_refund", "required"),
        ]
        scenario = {
            "base": url,
            "chatId": "chat-acme",
            "sendAutomaticallyWhen": "approvals",
            "body": {"plan": "gold"},
            "steps": [{"send": "Refund 5 dollars on A-1"}, {"approve": True}],
        }
        client = run_node_script("chat_e2e.mjs", scenario, timeout=120)
        assert [s for s in client["steps"] if "failed" in s] == [], client["steps"]
        (answer,) = [m for m in client["messages"] if m["role"] == "assistant"]
        tools = {p["type"]: p for p in answer["parts"] if p["type"].startswith("tool-")}
        assert tools["tool-lookup_order"]["output"] == {
            "orderId": "A-1",
            "status": "shipped",
            "customer": USER,
            "plan": "gold",
        }
        assert tools["tool-issue_refund"]["state"] == "output-available"
        assert tools["tool-issue_refund"]["output"]["approvedFor"] == USER
        assert [p["text"] for p in answer["parts"] if p["type"] == "text"] == ["Refund issued."]
        stored = httpx.get(f"{url}/api/conversations/chat-acme").json()
        assert stored["agent"] == "support"
        assert_requests_carry_the_agent(fake, project, "gold")
        fake.assert_all_consumed()


def test_stepline_run_runs_the_same_agent_module(tmp_path: Path) -> None:
    project = tmp_path / "acme"
    project.mkdir()
    (project / "support_agent.py").write_text(AGENT)
    with FakeOpenAI() as fake:
        script(fake)
        env = environment(fake)
        del env["STEPLINE_AGENT"]
        done = subprocess.run(
            [sys.executable, "-m", "stepline.cli", "run", "--agent", "support_agent:agent", "--approve", "Refund A-1"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "Refund issued."
        assert '← lookup_order {"orderId":"A-1","status":"shipped","customer":"local","plan":null}' in done.stderr
        calls = [r for r in fake.requests_to(RESPONSES_PATH) if r.body]
        assert (
            calls[0].body["input"][0]["content"]
            == "You are Acme's support agent. The customer is local on the None plan."
        )
        sent = [{k: t.get(k) for k in ("name", "description", "parameters")} for t in calls[0].body["tools"]]
        assert sent == expected_tools(project)
        fake.assert_all_consumed()
