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


def stepline(*args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ""}
    return subprocess.run(
        [sys.executable, "-m", "stepline.cli", "run", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env,
        timeout=60,
    )


def test_demo_model_answers_and_says_it_is_scripted() -> None:
    result = stepline("What is the weather in Paris?")
    assert result.returncode == 0, result.stderr
    assert "scripted demo model" in result.stderr
    assert "→ get_weather" in result.stderr
    assert result.stdout.startswith("Here is the weather in Paris")


def test_sse_output_reduces_to_the_full_message() -> None:
    result = stepline("--sse", "weather?")
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("data: [DONE]\n\n")
    reduced = reduce_ui_message_stream(decode_ui_message_stream(result.stdout))
    assert reduced.message is not None and reduced.error is None
    types = [p["type"] for p in reduced.message["parts"]]
    assert types == ["step-start", "reasoning", "tool-get_weather", "step-start", "text"]
    assert reduced.message["parts"][2]["state"] == "output-available"


@pytest.mark.parametrize(("flag", "expected"), [("--approve", '"deleted":true'), ("--deny", "delete_file: denied")])
def test_approval_flags_decide_and_the_run_continues(tmp_path: Path, flag: str, expected: str) -> None:
    result = stepline("--model", f"scripted:{delete_script(tmp_path)}", flag, "delete /tmp/x")
    assert result.returncode == 0, result.stderr
    assert expected in result.stderr
    assert result.stdout.strip() == "Handled."


def test_without_a_terminal_or_flag_the_run_waits(tmp_path: Path) -> None:
    result = stepline("--model", f"scripted:{delete_script(tmp_path)}", "delete /tmp/x")
    assert result.returncode == 3
    assert 'waiting for approval of delete_file {"path":"/tmp/x"}' in result.stderr


def test_unknown_provider_is_a_clear_error() -> None:
    result = stepline("--model", "acme:big-model", "hi")
    assert result.returncode == 2
    assert result.stderr.strip() == "stepline: unknown model provider 'acme' (known: scripted, openai, anthropic)"
