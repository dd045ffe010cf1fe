"""`stepline run` drives the real loop: plain text, SSE, approvals from flags, and a waiting exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stepline.protocol.reducer import reduce_ui_message_stream
from stepline.protocol.sse import decode_ui_message_stream

FINISH_TOOLS = {
    "type": "finish",
    "finishReason": {"unified": "tool-calls", "raw": "tool_use"},
    "usage": {"inputTokens": {"total": 5}, "outputTokens": {"total": 2}},
}
FINISH_STOP = {
    "type": "finish",
    "finishReason": {"unified": "stop", "raw": "stop"},
    "usage": {"inputTokens": {"total": 9}, "outputTokens": {"total": 3}},
}


def delete_script(tmp_path: Path) -> Path:
    script = [
        [
            {"type": "tool-call", "toolCallId": "c1", "toolName": "delete_file", "input": '{"path":"/tmp/x"}'},
            FINISH_TOOLS,
        ],
        [
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": "Handled."},
            {"type": "text-end", "id": "t"},
            FINISH_STOP,
        ],
    ]
    path = tmp_path / "delete.json"
    path.write_text(json.dumps({"steps": script}))
    return path


def stepline(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stepline.cli", "run", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": "", **env},
        cwd=cwd,
        timeout=60,
    )


def test_the_demo_agent_follows_the_prompt_with_the_workspace_tools_and_says_it_is_scripted() -> None:
    result = stepline("--approve", "Write a note")
    assert result.returncode == 0, result.stderr
    assert "scripted demo book" in result.stderr
    assert "→ write_file" in result.stderr and '← write_file {"path":"notes/hello.md"' in result.stderr
    assert result.stdout.strip().startswith("Done")


def test_sse_output_reduces_to_the_full_message() -> None:
    result = stepline("--sse", "list my files")
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("data: [DONE]\n\n")
    reduced = reduce_ui_message_stream(decode_ui_message_stream(result.stdout))
    assert reduced.message is not None and reduced.error is None
    types = [p["type"] for p in reduced.message["parts"]]
    assert types == ["step-start", "reasoning", "tool-list_files", "step-start", "text"]
    assert reduced.message["parts"][2]["state"] == "output-available"


def test_the_demo_book_says_plainly_when_the_agent_lacks_a_scripts_tool() -> None:
    result = stepline("--tools", "stepline.tools.demo", "Write a note")
    assert result.returncode == 0, result.stderr
    assert "AI_NoSuchToolError" not in result.stdout + result.stderr
    assert "calls write_file, which this agent does not have (its tools: delete_file, get_weather)" in result.stdout


AGENT_MODULE = '''
from typing import Annotated, Literal
from pydantic import Field
from stepline import Agent, RunContext, tool

@tool
def shout(text: Annotated[str, Field(description="What to shout")], times: int = 1) -> str:
    """Shout a text."""
    return text.upper() * times

@tool(approval="user-approval")
def launch(target: Literal["moon", "mars"], context: RunContext) -> dict:
    """Launch a rocket."""
    return {"target": target, "by": context.user_id}

def instructions(context: RunContext) -> str:
    return f"You serve {context.user_id}."

agent = Agent(name="rockets", tools=[shout, launch], instructions=instructions)
'''


def test_agent_runs_a_users_agent_module_from_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(AGENT_MODULE)
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "steps": [
                    [
                        {"type": "tool-call", "toolCallId": "c1", "toolName": "shout", "input": '{"text":"hi"}'},
                        {"type": "tool-call", "toolCallId": "c2", "toolName": "launch", "input": '{"target":"moon"}'},
                        FINISH_TOOLS,
                    ],
                    [
                        {"type": "text-start", "id": "t"},
                        {"type": "text-delta", "id": "t", "delta": "Launched."},
                        {"type": "text-end", "id": "t"},
                        FINISH_STOP,
                    ],
                ]
            }
        )
    )
    result = stepline("--agent", "my_agent:agent", "--model", f"scripted:{script}", "--approve", "go", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert '← shout "HI"' in result.stderr
    assert '← launch {"target":"moon","by":"local"}' in result.stderr
    assert result.stdout.strip() == "Launched."


def test_an_agent_reference_that_cannot_be_imported_is_named(tmp_path: Path) -> None:
    result = stepline("hi", cwd=tmp_path, STEPLINE_AGENT="nowhere:agent")
    assert result.returncode == 2
    assert "STEPLINE_AGENT=nowhere:agent: no module named nowhere" in result.stderr


@pytest.mark.parametrize(("flag", "expected"), [("--approve", '"deleted":true'), ("--deny", "delete_file: denied")])
def test_approval_flags_decide_and_the_run_continues(tmp_path: Path, flag: str, expected: str) -> None:
    result = stepline(
        "--model", f"scripted:{delete_script(tmp_path)}", "--tools", "stepline.tools.demo", flag, "delete"
    )
    assert result.returncode == 0, result.stderr
    assert expected in result.stderr
    assert result.stdout.strip() == "Handled."


def test_without_a_terminal_or_flag_the_run_waits(tmp_path: Path) -> None:
    result = stepline("--model", f"scripted:{delete_script(tmp_path)}", "--tools", "stepline.tools.demo", "delete")
    assert result.returncode == 3
    assert 'waiting for approval of delete_file {"path":"/tmp/x"}' in result.stderr


def test_unknown_provider_is_a_clear_error() -> None:
    result = stepline("--model", "acme:big-model", "hi")
    assert result.returncode == 2
    assert result.stderr.strip() == "stepline: unknown model provider 'acme' (known: scripted, openai, anthropic)"
