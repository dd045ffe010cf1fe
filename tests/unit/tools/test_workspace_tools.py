"""The default toolset (`stepline.tools.workspace`): the workspace, artifacts and questions, run as
the loop runs them, against the in-memory store and blob store."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from stepline.aws.s3 import S3BlobStore
from stepline.aws.wiring import Settings, build_services
from stepline.llm.registry import DEMO_BOOK
from stepline.llm.script_book import ScriptBook
from stepline.llm.scripted import ScriptedModel
from stepline.loop.approval import ApprovalDecision
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import StreamTextResult, stream_text
from stepline.loop.tools import Tool, ToolContext
from stepline.protocol._json import dumps
from stepline.protocol.model_messages import ToolModelMessage, ToolResultPart
from stepline.runtime import worker
from stepline.runtime.services import Services
from stepline.runtime.turn import begin_turn
from stepline.store.blobs import MemoryBlobStore
from stepline.store.memory import MemoryStore
from stepline.tools import load_toolset
from stepline.tools.context import RunContext
from stepline.tools.workspace import MAX_READ_BYTES, TOOL_APPROVAL, TOOLS, WorkspaceToolError
from tests.unit.loop.support import call, collect, run, text_step, tool_step

ROOT = "users/u1/conversations/c1/workspace/"


def context(blobs: MemoryBlobStore | None = None, store: MemoryStore | None = None) -> RunContext:
    return RunContext(
        user_id="u1",
        conversation_id="c1",
        run_id="run-1",
        message_id="msg-1",
        store=store or MemoryStore(),
        blobs=blobs if blobs is not None else MemoryBlobStore(),
    )


def by_name(name: str) -> Tool:
    return next(t for t in TOOLS if t.name == name)


def use(name: str, arguments: dict[str, Any], runtime: RunContext | None) -> Any:
    """Run one tool as the loop does: validate its input, then run it with a ToolContext."""
    tool = by_name(name)
    tool_context = ToolContext(
        tool_call_id=f"call-{name}", tool_name=name, run_id="run-1", messages=[], runtime_context=runtime
    )

    async def go() -> Any:
        outputs = [value async for value, _ in tool.run(tool.validate_input(arguments), tool_context)]
        return outputs[-1]

    return run(go)


def loop(steps: list[Any], runtime: RunContext | None, **options: Any) -> tuple[StreamTextResult, ScriptedModel]:
    model = ScriptedModel.from_script(steps)

    async def go() -> StreamTextResult:
        result = stream_text(
            model=model, prompt="go", tools=TOOLS, runtime_context=runtime, stop_when=is_step_count(5), **options
        )
        await collect(result)
        return result

    return run(go), model


def tool_outputs(model: ScriptedModel, call_index: int) -> list[ToolResultPart]:
    """The tool results the model read in its call number `call_index`."""
    message = model.calls[call_index].prompt[-1]
    assert isinstance(message, ToolModelMessage)
    return [p for p in message.content if isinstance(p, ToolResultPart)]


def test_a_written_file_reads_back_and_is_listed() -> None:
    runtime = context()
    content = "# Notes\n\nçà et là — 你好\n"
    assert use("write_file", {"path": "./notes//todo.md", "content": content}, runtime) == {
        "path": "notes/todo.md",
        "bytes": len(content.encode()),
    }
    use("write_file", {"path": "b.txt", "content": "b"}, runtime)
    assert use("read_file", {"path": "notes/todo.md"}, runtime) == {"path": "notes/todo.md", "content": content}
    assert use("list_files", {}, runtime) == {"folder": "", "files": ["b.txt", "notes/todo.md"]}
    assert use("list_files", {"folder": "notes"}, runtime) == {"folder": "notes", "files": ["notes/todo.md"]}
    assert runtime.blobs is not None
    assert runtime.blobs.list_keys("users/") == [ROOT + "b.txt", ROOT + "notes/todo.md"]


def test_a_missing_file_and_a_binary_file_are_clear_errors() -> None:
    blobs = MemoryBlobStore()
    runtime = context(blobs)
    with pytest.raises(WorkspaceToolError, match="no file notes/none.md in this conversation's workspace"):
        use("read_file", {"path": "notes/none.md"}, runtime)
    blobs.put_object(ROOT + "image.png", b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    with pytest.raises(WorkspaceToolError, match=r"image.png is a binary file \(12 bytes\), not UTF-8 text"):
        use("read_file", {"path": "image.png"}, runtime)


def test_a_long_file_is_cut_at_the_limit_and_says_so() -> None:
    blobs = MemoryBlobStore()
    runtime = context(blobs)
    # A three-byte character straddles the limit: it is dropped whole, never half-decoded.
    text = "a" * (MAX_READ_BYTES - 1) + "€" + "tail"
    blobs.put_object(ROOT + "big.txt", text.encode())
    result = use("read_file", {"path": "big.txt"}, runtime)
    assert result["content"] == "a" * (MAX_READ_BYTES - 1)
    assert result["truncated"] is True
    assert result["note"] == f"showing the first {MAX_READ_BYTES} of {MAX_READ_BYTES + 6} bytes"


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("write_file", {"path": "../c2/workspace/x.md", "content": "x"}, "'..' is not allowed"),
        ("write_file", {"path": "/etc/passwd", "content": "x"}, "it must be relative"),
        ("read_file", {"path": "notes/../../secret"}, "'..' is not allowed"),
        ("list_files", {"folder": "../.."}, "'..' is not allowed"),
        ("save_artifact", {"path": "a\\..\\b"}, "backslashes are not allowed"),
    ],
)
def test_a_path_cannot_leave_the_workspace(name: str, arguments: dict[str, Any], message: str) -> None:
    blobs = MemoryBlobStore()
    result, model = loop([tool_step(call("c1", name, dumps(arguments))), text_step("ok")], context(blobs))
    assert result.outcome is not None and result.outcome.kind == "finished"  # the loop goes on
    (output,) = tool_outputs(model, 1)
    error = output.output.to_wire()
    assert error["type"] == "error-text"
    assert error["value"].startswith("WorkspaceToolError: invalid workspace path: ")
    assert message in error["value"] and "paths are relative to the workspace" in error["value"]
    assert blobs.list_keys("users/") == []


def test_saving_the_same_file_twice_records_one_artifact_of_the_message() -> None:
    store, blobs = MemoryStore(), MemoryBlobStore()
    runtime = context(blobs, store)
    use("write_file", {"path": "report.md", "content": "# Report\n"}, runtime)
    first = use("save_artifact", {"path": "report.md", "title": "Quarterly report"}, runtime)
    again = use("save_artifact", {"path": "./report.md", "title": "Another title"}, runtime)
    assert first == again
    assert first == {
        "artifactId": first["artifactId"],
        "title": "Quarterly report",
        "url": f"/api/artifacts/{first['artifactId']}",
        "mediaType": "text/markdown",
    }
    (record,) = store.list_message_artifacts("u1", "msg-1")
    assert (record.artifact_id, record.run_id, record.conversation_id) == (first["artifactId"], "run-1", "c1")
    assert (record.type, record.name, record.storage_key, record.size) == ("file", "report.md", ROOT + "report.md", 9)
    assert record.tool_call_id == "call-save_artifact" and record.metadata == {"title": "Quarterly report"}


def test_an_artifact_needs_an_existing_file_and_defaults_its_title_to_the_file_name() -> None:
    runtime = context()
    with pytest.raises(WorkspaceToolError, match="no file out/chart.csv .* write it first"):
        use("save_artifact", {"path": "out/chart.csv"}, runtime)
    use("write_file", {"path": "out/chart.csv", "content": "a,b\n1,2\n"}, runtime)
    saved = use("save_artifact", {"path": "out/chart.csv"}, runtime)
    assert (saved["title"], saved["mediaType"]) == ("chart.csv", "text/csv")


def test_write_file_waits_for_approval_and_writes_only_once_approved() -> None:
    assert TOOL_APPROVAL == {"write_file": "user-approval"}
    assert load_toolset("stepline.tools.workspace") == (TOOLS, TOOL_APPROVAL)
    blobs = MemoryBlobStore()
    runtime = context(blobs)
    write = call("c1", "write_file", '{"path":"a.md","content":"hi"}')
    paused, _ = loop([tool_step(write)], runtime, tool_approval=TOOL_APPROVAL)
    assert paused.outcome is not None and paused.outcome.kind == "await-approval"
    assert blobs.list_keys("users/") == []
    (pending,) = paused.state.pending_approvals
    model = ScriptedModel.from_script([text_step("Written.")])

    async def resume() -> StreamTextResult:
        result = stream_text(
            model=model,
            state=paused.state,
            approval_decisions=[ApprovalDecision(approval_id=pending.approval_id, approved=True)],
            tools=TOOLS,
            tool_approval=TOOL_APPROVAL,
            runtime_context=runtime,
            stop_when=is_step_count(5),
        )
        await collect(result)
        return result

    done = run(resume)
    assert done.outcome is not None and done.outcome.kind == "finished"
    assert blobs.get_object(ROOT + "a.md") == b"hi"


def test_ask_user_question_is_a_client_side_tool_the_run_waits_for() -> None:
    ask = by_name("ask_user_question")
    assert ask.client_side and ask.name not in TOOL_APPROVAL
    assert ask.input_schema["required"] == ["question"]
    question = '{"question":"Which one?","options":["A","B"]}'
    result, _ = loop([tool_step(call("q1", "ask_user_question", question))], context())
    assert result.outcome is not None and result.outcome.kind == "await-client"
    (pending,) = result.state.pending_client_calls
    assert (pending.tool_name, pending.input) == (
        "ask_user_question",
        {"question": "Which one?", "options": ["A", "B"]},
    )


@pytest.mark.parametrize("runtime", [None, "no-blobs"])
def test_without_a_workspace_a_tool_returns_an_error_the_model_reads(runtime: str | None) -> None:
    given = context()
    without = None if runtime is None else replace(given, blobs=None)
    result, model = loop([tool_step(call("c1", "list_files")), text_step("No workspace here.")], without)
    assert result.outcome is not None and result.outcome.kind == "finished"
    (output,) = tool_outputs(model, 1)
    assert output.output.to_wire() == {
        "type": "error-text",
        "value": "WorkspaceToolError: list_files needs the conversation's workspace, and this run has none "
        "(the workspace tools work in the Stepline server, not in a run without file storage)",
    }


def test_a_model_step_gives_its_tools_the_run_context() -> None:
    """The worker builds the RunContext from the run record (user, conversation, run, assistant message)."""
    seen: list[Any] = []

    def probe(_: Any, tool_context: ToolContext) -> str:
        seen.append(tool_context.runtime_context)
        return "ok"

    store, blobs = MemoryStore(), MemoryBlobStore()
    model = ScriptedModel.from_script(
        [tool_step(call("c1", "probe"), call("c2", "write_file", '{"path":"n.md","content":"x"}')), text_step("ok")]
    )
    services = Services(
        store=store, model=model, blobs=blobs, tools=[*TOOLS, Tool(name="probe", execute=probe)], clock=lambda: 1000
    )
    user_message = {"id": "u-1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    begin_turn(
        services,
        "alice",
        conversation_id="conv-1",
        run_id="run-1",
        assistant_message_id="a-1",
        user_message=user_message,
    )
    assert worker.model_step(services, "alice", "run-1", invocation_id="i-1")["next"] == "continue"
    (runtime,) = seen
    assert runtime == RunContext(
        user_id="alice",
        conversation_id="conv-1",
        run_id="run-1",
        message_id="a-1",
        store=store,
        blobs=blobs,
        claims={"sub": "alice"},
        agent="default",
    )
    assert blobs.get_object("users/alice/conversations/conv-1/workspace/n.md") == b"x"


def test_the_functions_settings_default_to_the_workspace_toolset_with_the_bucket_as_its_blobs() -> None:
    # template.yaml sets STEPLINE_TOOLS from its ToolsModule parameter; this is the default without it.
    env = {"STEPLINE_AGENT_TABLE": "agent", "STEPLINE_EVENTS_TABLE": "events", "STEPLINE_BUCKET": "bucket"}
    settings = Settings.from_env({**env, "STEPLINE_MODEL": f"scripted:{DEMO_BOOK}"})
    assert settings.tools == "stepline.tools.workspace"
    services = build_services(settings, client=lambda name: object())  # no AWS call while building
    assert isinstance(services.blobs, S3BlobStore) and services.blobs.bucket == "bucket"
    agent = services.agent_set.default
    assert ([t.name for t in agent.tools], agent.tool_approval) == ([t.name for t in TOOLS], TOOL_APPROVAL)
    assert isinstance(services.model_for(agent), ScriptBook)
