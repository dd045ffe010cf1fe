"""The MCP toolset against a real MCP server (the official SDK's `MCPServer`) over Streamable HTTP
on loopback and over stdio: listing and its cache, filters and prefixes, result mapping, and every
failure (an `isError` result, a dropped connection, a server that is down, a timeout) as a tool
error the model reads, never a failed run."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from stepline.agent.definition import Agent
from stepline.loop.stream_text import stream_text
from stepline.loop.tools import Tool
from stepline.protocol import stream_parts as sp
from stepline.protocol.model_messages import ContentOutput, ErrorTextOutput, ToolModelMessage, ToolResultPart
from stepline.runtime.guard import StoreToolGuard
from stepline.store.memory import MemoryStore
from stepline.tools import load_toolset
from stepline.tools.mcp import HttpServer, McpConfigError, McpToolError, McpToolset, from_env
from stepline.tools.mcp.connection import call_tool
from stepline.tools.mcp.results import to_model_output
from stepline.tools.mcp.secrets import ParameterHeaders
from tests.contract.test_store_contract import USER, start
from tests.support.aws_env import use_fake_aws
from tests.support.mcp import HttpMcp, closed_port_url, http_mcp, invoke, stdio_mcp
from tests.unit.loop.support import call, collect, model, text_step, tool_step

ALL = ["add", "echo", "pixel", "readme", "fail", "crash", "wait", "delete_row", "whoami"]


@pytest.fixture(scope="module")
def live() -> Iterator[HttpMcp]:
    with http_mcp() as server:
        yield server


def http(url: str, **options: Any) -> HttpServer:
    return HttpServer.model_validate({"name": "test", "url": url, **options})


def by_name(toolset: McpToolset) -> dict[str, Tool]:
    return {t.name: t for t in toolset}


# -- listing ------------------------------------------------------------------------------------------------


def test_the_servers_tools_become_tools_with_their_schemas(live: HttpMcp) -> None:
    tools = by_name(McpToolset([http(live.url)]))
    assert sorted(tools) == sorted(ALL)
    add = tools["add"]
    assert add.description == "Add two integers."
    assert add.input_schema["required"] == ["a", "b"]
    assert add.definition().input_schema == add.input_schema
    with pytest.raises(ValueError, match=r"input\.b: required property missing"):
        add.validate_input({"a": 1})


def test_prefix_allowed_and_blocked_lists_shape_what_the_model_sees(live: HttpMcp) -> None:
    server = http(live.url, prefix="calc", allowedTools=["add", "echo", "fail"], blockedTools=["fail"])
    assert sorted(by_name(McpToolset([server]))) == ["calc_add", "calc_echo"]


def test_a_name_that_is_taken_is_left_out_not_doubled(live: HttpMcp, caplog: pytest.LogCaptureFixture) -> None:
    mine = Tool(name="echo", execute=lambda _: "mine")
    toolset = McpToolset([http(live.url, allowedTools=["echo", "add"])], tools=[mine])
    with caplog.at_level(logging.WARNING, "stepline.tools.mcp"):
        tools = list(toolset)
    assert [t.name for t in tools] == ["echo", "add"] and tools[0] is mine
    assert "its name echo is taken" in caplog.text


def test_the_tool_list_is_fetched_once_per_process() -> None:
    with http_mcp() as server:
        toolset = McpToolset([http(server.url, allowedTools=["add"])])
        assert [t.name for t in toolset] == ["add"]
        server.stop()
        # Down now: the cached listing still serves every later step, with no connection.
        assert [t.name for t in toolset] == ["add"] and len(toolset) == 1 and toolset[0].name == "add"


def test_a_server_that_is_down_at_listing_is_skipped_then_asked_again_later(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    attempts: list[str] = []

    def headers(server: HttpServer) -> dict[str, str]:
        attempts.append(server.name)
        return {}

    down = http(closed_port_url())
    with caplog.at_level(logging.WARNING, "stepline.tools.mcp"):
        toolset = McpToolset([down], headers=headers, retry_seconds=30, clock=lambda: now[0])
        assert list(toolset) == [] and attempts == ["test"]
    assert "MCP server test is not listed" in caplog.text and "unreachable" in caplog.text
    now[0] = 29.0
    assert list(toolset) == [] and attempts == ["test"], "not asked again before retry_seconds"
    now[0] = 30.0
    assert list(toolset) == [] and attempts == ["test", "test"]


def test_approval_per_tool_and_a_default_for_the_rest(live: HttpMcp) -> None:
    server = http(
        live.url, prefix="db", allowedTools=["delete_row", "add", "echo"], approval={"delete_row": "user-approval"}
    )
    toolset = McpToolset([server], tool_approval={"write_file": "user-approval"})
    assert dict(toolset.approval) == {"write_file": "user-approval", "db_delete_row": "user-approval"}
    everything = McpToolset(
        [http(live.url, allowedTools=["add", "echo"], approval={"*": "user-approval", "add": "approved"})]
    )
    assert dict(everything.approval) == {"add": "approved", "echo": "user-approval"}


def test_each_tool_carries_its_approval_so_an_agent_needs_no_policy_of_its_own(live: HttpMcp) -> None:
    toolset = McpToolset([http(live.url, allowedTools=["add", "echo"], approval={"echo": "user-approval"})])
    assert {t.name: t.approval for t in toolset} == {"add": None, "echo": "user-approval"}
    agent = Agent(tools=[toolset])
    assert (agent.approval_of("echo"), agent.approval_of("add")) == ("required", "none")


def test_the_approval_policy_stays_live_while_a_server_is_unlisted() -> None:
    # `approval or None` (what the composition roots write) must not drop a policy that is empty
    # only because its server has not been listed yet.
    toolset = McpToolset([http(closed_port_url(), approval={"*": "user-approval"})], retry_seconds=0)
    assert len(toolset.approval) == 0 and bool(toolset.approval) is True


# -- results -------------------------------------------------------------------------------------------------


def test_results_map_to_outputs_and_model_outputs(live: HttpMcp) -> None:
    tools = by_name(McpToolset([http(live.url)]))
    assert invoke(tools["add"], {"a": 2, "b": 3}) == {"sum": 5}
    assert invoke(tools["echo"], {"text": "hi"}) == {"result": "echo: hi"}
    pixel = invoke(tools["pixel"], {})
    (image,) = pixel["content"]
    assert (image["type"], image["mediaType"]) == ("image", "image/png") and len(image["data"]) > 20
    assert to_model_output("c", {}, pixel) == {
        "type": "content",
        "value": [{"type": "file", "mediaType": "image/png", "data": {"type": "data", "data": image["data"]}}],
    }
    readme = invoke(tools["readme"], {})
    assert readme == {
        "content": [{"type": "resource", "uri": "file:///README.md", "mediaType": "text/markdown", "text": "# Hello"}]
    }
    assert to_model_output("c", {}, readme)["value"] == [{"type": "text", "text": "file:///README.md:\n# Hello"}]
    assert to_model_output("c", {}, {"sum": 5}) == {"type": "json", "value": {"sum": 5}}


def test_an_error_result_is_a_tool_error(live: HttpMcp) -> None:
    with pytest.raises(McpToolError, match="the row is locked"):
        invoke(by_name(McpToolset([http(live.url)]))["fail"], {})


def test_a_connection_dropped_mid_call_is_a_tool_error() -> None:
    with http_mcp() as server:
        crash = by_name(McpToolset([http(server.url, allowedTools=["crash"])]))["crash"]
        with pytest.raises(McpToolError, match="MCP server test is unreachable or dropped the connection"):
            invoke(crash, {})
        assert server.process.wait(10) == 3, "the server really died during the call"


def test_a_server_that_went_down_after_listing_is_a_tool_error() -> None:
    with http_mcp() as server:
        add = by_name(McpToolset([http(server.url, allowedTools=["add"])]))["add"]
        server.stop()
        with pytest.raises(McpToolError, match=r"MCP server test is unreachable .*ConnectError"):
            invoke(add, {"a": 1, "b": 2})


def test_a_call_past_its_timeout_is_a_tool_error(live: HttpMcp) -> None:
    # The call itself, with the short timeout: a toolset with it would also have to list within
    # 0.5 s, which a busy machine does not promise (its listing failure is another test's).
    server = http(live.url, allowedTools=["wait"], timeoutSeconds=0.5)
    with pytest.raises(McpToolError, match="MCP tool wait of server test timed out after 0.5 s"):
        asyncio.run(call_tool(server, "wait", {"seconds": 30}, headers=lambda _server: {}))


def test_stdio_servers_list_call_and_drop_like_remote_ones() -> None:
    tools = by_name(McpToolset([stdio_mcp(prefix="local", allowedTools=["add", "crash", "whoami"])]))
    assert sorted(tools) == ["local_add", "local_crash", "local_whoami"]
    assert invoke(tools["local_add"], {"a": 40, "b": 2}) == {"sum": 42}
    with pytest.raises(McpToolError, match="MCP server local is unreachable or dropped the connection"):
        invoke(tools["local_crash"], {})


def test_a_stdio_server_that_cannot_start_is_a_listing_failure_not_a_crash() -> None:
    missing = stdio_mcp().model_copy(update={"command": "/nonexistent/mcp-server"})
    assert list(McpToolset([missing])) == []


# -- headers ----------------------------------------------------------------------------------------------


def test_configured_headers_reach_the_server_and_stay_out_of_reprs(live: HttpMcp) -> None:
    server = http(live.url, allowedTools=["whoami"], headers={"Authorization": "Bearer s3cret"})
    assert "s3cret" not in repr(server)
    assert invoke(by_name(McpToolset([server]))["whoami"], {}) == {"result": "Bearer s3cret"}


@pytest.mark.parametrize("store", ["ssm", "secretsmanager"])
def test_headers_from_a_parameter_are_read_once(live: HttpMcp, monkeypatch: pytest.MonkeyPatch, store: str) -> None:
    use_fake_aws(monkeypatch)
    with mock_aws():
        value = json.dumps({"Authorization": "Bearer from-aws"})
        if store == "ssm":
            boto3.client("ssm").put_parameter(Name="/stepline/mcp/test", Value=value, Type="SecureString")
            name = "/stepline/mcp/test"
        else:
            boto3.client("secretsmanager").create_secret(Name="mcp-test", SecretString=value)
            name = "secretsmanager:mcp-test"
        made: list[str] = []

        def client(service: str) -> Any:
            made.append(service)
            return boto3.client(service)  # pyright: ignore

        headers = ParameterHeaders(client)
        server = http(live.url, allowedTools=["whoami"], headersParameter=name, headers={"Authorization": "x"})
        whoami = by_name(McpToolset([server], headers=headers))["whoami"]
        assert invoke(whoami, {}) == {"result": "Bearer from-aws"}
        assert invoke(whoami, {}) == {"result": "Bearer from-aws"}
    assert made == [store], "read once: at the listing, not at every call"


def test_a_missing_parameter_names_itself_and_nothing_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_aws(monkeypatch)
    with mock_aws():
        server = http("http://127.0.0.1:9/mcp", headersParameter="/stepline/mcp/absent")
        with pytest.raises(
            McpToolError, match=r"cannot read the MCP headers parameter /stepline/mcp/absent \(ParameterNotFound\)"
        ):
            ParameterHeaders()(server)


# -- through the loop: the model reads the error, the run goes on ---------------------------------------------


def test_a_failing_mcp_tool_is_an_error_the_model_reads_and_the_run_finishes(live: HttpMcp) -> None:
    with http_mcp() as flaky:
        toolset = McpToolset(
            [
                HttpServer(name="flaky", url=flaky.url, prefix="db", allowed_tools=frozenset({"crash"})),
                HttpServer(name="calc", url=live.url, prefix="calc", allowed_tools=frozenset({"add"})),
            ]
        )
        scripted = model(
            tool_step(call("c1", "db_crash"), call("c2", "calc_add", '{"a": 1, "b": 1}')), text_step("sorry")
        )

        async def go() -> list[sp.TextStreamPart]:
            return await collect(stream_text(model=scripted, prompt="go", tools=toolset, stop_when=lambda _: False))

        parts = asyncio.run(go())
    errors = [p for p in parts if isinstance(p, sp.ToolError)]
    assert [(e.tool_name, type(e.error).__name__) for e in errors] == [("db_crash", "McpToolError")]
    assert "MCP server flaky is unreachable or dropped the connection" in str(errors[0].error)
    assert [p.output for p in parts if isinstance(p, sp.ToolResult)] == [{"sum": 2}]
    message = scripted.calls[1].prompt[-1]
    assert isinstance(message, ToolModelMessage)
    outputs = {p.tool_call_id: p.output for p in message.content if isinstance(p, ToolResultPart)}
    assert isinstance(outputs["c1"], ErrorTextOutput) and "dropped the connection" in outputs["c1"].value
    assert any(isinstance(p, sp.Finish) for p in parts)


def test_an_image_result_reaches_the_model_as_a_file(live: HttpMcp) -> None:
    toolset = McpToolset([http(live.url, allowedTools=["pixel"])])
    scripted = model(tool_step(call("c1", "pixel")), text_step("a pixel"))

    async def go() -> None:
        await collect(stream_text(model=scripted, prompt="go", tools=toolset, stop_when=lambda _: False))

    asyncio.run(go())
    message = scripted.calls[1].prompt[-1]
    assert isinstance(message, ToolModelMessage)
    (result,) = [p for p in message.content if isinstance(p, ToolResultPart)]
    assert isinstance(result.output, ContentOutput)
    assert result.output.value[0]["type"] == "file" and result.output.value[0]["mediaType"] == "image/png"


# -- configuration from the environment ------------------------------------------------------------------------


def test_the_toolset_module_reads_stepline_mcp_servers(
    live: HttpMcp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = {
        "servers": [{"type": "http", "name": "calc", "url": live.url, "prefix": "calc", "allowedTools": ["add"]}],
        "include": "stepline.tools.demo",
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(document))
    monkeypatch.setenv("STEPLINE_MCP_SERVERS", str(path))
    tools, approval = load_toolset("stepline.tools.mcp")
    assert isinstance(tools, McpToolset), "kept live, not copied to a list"
    assert [t.name for t in tools] == ["get_weather", "delete_file", "calc_add"]
    assert dict(approval) == {"delete_file": "user-approval"}
    assert from_env() is tools, "one toolset (one listing cache) per process"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "STEPLINE_MCP_SERVERS is not set"),
        ('{"servers": []}', "servers: List should have at least 1 item"),
        ('{"servers": [{"type": "http", "name": "x", "url": "ftp://x"}]}', "url: String should match pattern"),
        ('{"servers": [{"type": "stdio", "name": "a b", "command": "x"}]}', "name: String should match pattern"),
        ("/nonexistent/mcp.json", "names a file that cannot be read: /nonexistent/mcp.json"),
    ],
)
def test_a_bad_server_document_names_what_is_wrong(value: str, message: str) -> None:
    with pytest.raises(McpConfigError, match=message.replace("(", r"\(")):
        from_env({"STEPLINE_MCP_SERVERS": value})


# -- the exactly-once claim: a redone step does not call the server again --------------------------------------


def test_a_redone_step_reuses_the_mcp_outcome_and_an_interrupted_call_is_not_rerun(tmp_path: Path) -> None:
    count = tmp_path / "count"
    store = MemoryStore()
    start(store)
    with http_mcp(count) as server:
        toolset = McpToolset([http(server.url, allowedTools=["delete_row"])])

        def step(token: str, call_id: str) -> list[sp.TextStreamPart]:
            guard = StoreToolGuard(store, user_id=USER, run_id="r1", claim_token=token, now=lambda: 1_100)
            scripted = model(tool_step(call(call_id, "delete_row", '{"row": 1}')))

            async def go() -> list[sp.TextStreamPart]:
                return await collect(stream_text(model=scripted, prompt="go", tools=toolset, tool_guard=guard))

            return asyncio.run(go())

        first = step("attempt-1", "c1")
        again = step("attempt-2", "c1")  # the same step redone (a retried Lambda invocation)
        assert count.read_text() == "1", "the non-idempotent tool ran once"
        assert [p.output for p in first + again if isinstance(p, sp.ToolResult)] == [{"result": "row 1 deleted"}] * 2
        # A crash after the call started leaves it running: the retry says so and does not call again.
        store.claim_tool_call(USER, "r1", "c2", tool_name="delete_row", input={}, step_index=0, claim_token="x", now=1)
        store.start_tool_call(USER, "r1", "c2", claim_token="x", now=2)
        interrupted = step("attempt-3", "c2")
        (error,) = [p for p in interrupted if isinstance(p, sp.ToolError)]
        assert "was interrupted after it started; it is not run again" in str(error.error)
        assert count.read_text() == "1"
