from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from stepline.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "stepline" / "samples" / "weather.sse"


def run(args: list[str], stdin: str = "", monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str]:
    if monkeypatch is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    out = io.StringIO()
    return main(args, out=out), out.getvalue()


def test_reduce_the_bundled_sse_sample() -> None:
    status, out = run(["protocol", "reduce", "--sse", str(SAMPLE)])
    assert status == 0
    message = json.loads(out)
    assert message["id"] == "msg-demo"
    assert [p["type"] for p in message["parts"]] == ["step-start", "reasoning", "tool-weather", "step-start", "text"]
    assert message["parts"][-1]["text"] == "It is 18 °C and clear in Paris."
    assert message["metadata"]["usage"] == {"inputTokens": 812, "outputTokens": 64}


def test_reduce_json_from_stdin_and_continue_a_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    start = tmp_path / "start.json"
    start.write_text(
        json.dumps({"id": "m", "role": "assistant", "parts": [{"type": "text", "text": "a", "state": "done"}]})
    )
    chunks = [{"type": "text-start", "id": "t"}, {"type": "text-delta", "id": "t", "delta": "b"}]
    status, out = run(["protocol", "reduce", "--message", str(start), "-"], json.dumps(chunks), monkeypatch)
    assert status == 0
    assert [p["text"] for p in json.loads(out)["parts"]] == ["a", "b"]


def test_an_empty_stream_yields_null(monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(["protocol", "reduce"], "[]", monkeypatch) == (0, "null\n")


def test_protocol_violation_exits_1_naming_the_chunk(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(["protocol", "reduce"], '[{"type":"text-delta","id":"x","delta":"a"}]', monkeypatch)
    assert (status, out) == (1, "")
    assert "protocol violation at text-delta 'x'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("not json", "the chunk array is not valid JSON"),
        ('[{"type":"text-delta","id":"x"}]', "chunks[0].delta: Field required"),
        ('[{"type":"bogus"}]', "unknown UI message chunk type"),
    ],
)
def test_invalid_input_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stdin: str, message: str
) -> None:
    status, _ = run(["protocol", "reduce"], stdin, monkeypatch)
    assert status == 2
    assert message in capsys.readouterr().err


def test_unreadable_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["protocol", "reduce", "/nonexistent/x.json"])[0] == 2
    assert "cannot read /nonexistent/x.json" in capsys.readouterr().err


def test_bad_sse_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = tmp_path / "b.sse"
    body.write_text("data: {nope\n\n")
    assert run(["protocol", "reduce", "--sse", str(body)])[0] == 2
    assert "invalid SSE body: SSE event 0" in capsys.readouterr().err


CONVERSATION = [
    {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "weather?"}]},
    {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "tool-weather",
                "toolCallId": "c1",
                "state": "output-available",
                "input": {"city": "Paris"},
                "output": "sunny",
            },
            {"type": "tool-weather", "toolCallId": "c2", "state": "input-available", "input": {"city": "Rome"}},
            {"type": "step-start"},
            {"type": "text", "text": "Sunny."},
        ],
    },
]


def test_convert_splits_steps_into_assistant_and_tool_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    status, out = run(["protocol", "convert"], json.dumps(CONVERSATION), monkeypatch)
    assert status == 0
    roles = [m["role"] for m in json.loads(out)]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert [p["toolCallId"] for p in json.loads(out)[1]["content"]] == ["c1", "c2"]


def test_convert_can_drop_incomplete_tool_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    status, out = run(["protocol", "convert", "--ignore-incomplete-tool-calls"], json.dumps(CONVERSATION), monkeypatch)
    assert status == 0
    assert [p["toolCallId"] for p in json.loads(out)[1]["content"]] == ["c1"]


def test_convert_reports_the_path_of_an_invalid_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = [{"id": "u1", "role": "user", "parts": [{"type": "text"}]}]
    assert run(["protocol", "convert"], json.dumps(bad), monkeypatch)[0] == 2
    assert "messages[0].parts[0].text" in capsys.readouterr().err


def test_convert_says_unsupported_role_and_takes_what_the_sdk_converts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ask = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    tool_message = {"id": "t1", "role": "tool", "parts": []}
    assert run(["protocol", "convert"], json.dumps([ask, tool_message]), monkeypatch)[0] == 2
    assert "Unsupported role: tool" in capsys.readouterr().err
    stateless = {"type": "tool-w", "toolCallId": "c1", "input": {}}
    denied = {"type": "tool-w", "toolCallId": "c2", "state": "output-denied", "input": {}}
    answer = {"id": "a1", "role": "assistant", "parts": [stateless, denied]}
    status, out = run(["protocol", "convert", "--ignore-incomplete-tool-calls"], json.dumps([ask, answer]), monkeypatch)
    assert status == 0
    assert [m["role"] for m in json.loads(out)] == ["user", "assistant", "tool"]
    assert json.loads(out)[2]["content"][0]["output"] == {"type": "error-text", "value": "Tool call execution denied."}


def test_convert_reports_a_relative_file_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = [{"id": "u1", "role": "user", "parts": [{"type": "file", "mediaType": "text/html", "url": "/api/x.html"}]}]
    assert run(["protocol", "convert"], json.dumps(bad), monkeypatch)[0] == 2
    assert "invalid file URL '/api/x.html'" in capsys.readouterr().err


def test_dev_refuses_a_data_folder_another_server_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stepline.local.restart import lock_data_dir

    held = lock_data_dir(tmp_path)  # as a running `stepline dev --data tmp_path` holds it
    try:
        assert run(["dev", "--port", "0", "--data", str(tmp_path)]) == (2, "")
    finally:
        held.close()
    assert f"{tmp_path} is in use by another stepline dev" in capsys.readouterr().err


def test_dev_keeps_either_a_data_folder_or_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["dev", "--memory", "--data", "somewhere"])
    assert exited.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
