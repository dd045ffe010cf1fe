from __future__ import annotations

from typing import Any

from stepline.store.history import history_messages
from stepline.store.records import MessageRecord


def message(
    seq: int, role: Any, *, parts: list[dict[str, Any]] | None = None, content: str = "", status: Any = "completed"
) -> MessageRecord:
    return MessageRecord(
        user_id="u",
        conversation_id="c",
        message_id=f"m{seq}",
        seq=seq,
        role=role,
        parts=parts or [],
        content=content,
        status=status,
        created_at=seq,
    )


USER = message(1, "user", parts=[{"type": "text", "text": "weather in Paris?"}], content="weather in Paris?")
ANSWER = message(
    2,
    "assistant",
    parts=[
        {"type": "step-start"},
        {
            "type": "tool-weather",
            "toolCallId": "c1",
            "state": "output-available",
            "input": {"city": "Paris"},
            "output": {"t": 18},
        },
        {"type": "step-start"},
        {"type": "text", "text": "18 degrees.", "state": "done"},
    ],
    content="18 degrees.",
)


def wire(messages: list[Any]) -> list[dict[str, Any]]:
    return [m.to_wire() for m in messages]


def test_complete_parts_bring_back_tool_calls_and_results() -> None:
    result = wire(
        history_messages(
            [USER, ANSWER, message(3, "user", parts=[{"type": "text", "text": "and Rome?"}], content="and Rome?")]
        )
    )
    assert [m["role"] for m in result] == ["user", "assistant", "tool", "assistant", "user"]
    assert result[1]["content"][0]["toolCallId"] == "c1"
    assert result[2]["content"][0]["output"] == {"type": "json", "value": {"t": 18}}


def test_legacy_and_unconvertible_messages_fall_back_to_text() -> None:
    legacy = message(2, "assistant", content="an answer from before parts")
    broken = message(
        4,
        "assistant",
        parts=[{"type": "file", "mediaType": "text/html", "url": "/relative.html"}],
        content="see the file",
    )
    unfinished = message(
        6,
        "assistant",
        parts=[{"type": "text", "text": "half", "state": "streaming"}],
        content="half",
        status="streaming",
    )
    asks = [message(i, "user", parts=[{"type": "text", "text": f"q{i}"}], content=f"q{i}") for i in (1, 3, 5, 7)]
    result = wire(history_messages([asks[0], legacy, asks[1], broken, asks[2], unfinished, asks[3]]))
    assert [m["role"] for m in result] == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert result[1]["content"] == [{"type": "text", "text": "an answer from before parts"}]
    assert result[3]["content"] == [{"type": "text", "text": "see the file"}]
    assert result[5]["content"] == [{"type": "text", "text": "half"}]


def test_budget_keeps_the_newest_and_never_starts_with_an_answer() -> None:
    old = [
        message(i, "user" if i % 2 else "assistant", content="x" * 1_000, parts=[{"type": "text", "text": "x" * 1_000}])
        for i in range(1, 9)
    ]
    newest = message(9, "user", parts=[{"type": "text", "text": "latest"}], content="latest")
    result = wire(history_messages([*old, newest], budget_chars=2_600))
    assert result[-1]["content"] == [{"type": "text", "text": "latest"}]
    assert result[0]["role"] == "user"
    assert len(result) == 3  # 9 (latest), 8, 7 fit; 8 is an assistant message kept after the user 7
    huge = message(1, "user", parts=[{"type": "text", "text": "y" * 10_000}], content="y" * 10_000)
    assert len(history_messages([huge], budget_chars=10)) == 1  # the newest message always fits
