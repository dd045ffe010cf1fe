from __future__ import annotations

from typing import Any

from stepline.context.compaction import message_id_of
from stepline.context.groups import summary_of, unpaired_calls
from stepline.context.tokens import MessageTokens
from stepline.store.history import history_messages, turn_history
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


def test_budget_in_tokens_keeps_the_newest_and_says_what_it_left_out() -> None:
    words = "every word here is about one token long "
    old = [
        message(i, "user" if i % 2 else "assistant", content=words * 25, parts=[{"type": "text", "text": words * 25}])
        for i in range(1, 9)
    ]
    newest = message(9, "user", parts=[{"type": "text", "text": "latest"}], content="latest")
    tokens = MessageTokens()
    each = tokens.message(history_messages([old[0]])[0])
    history = turn_history([*old, newest], budget_tokens=2 * each + 20, tokens=tokens)
    result = wire(history.messages)
    assert result[-1]["content"] == [{"type": "text", "text": "latest"}]
    assert result[0]["role"] == "user"
    assert len(result) == 3  # 9 (latest), 8, 7 fit; 8 is an assistant message kept after the user 7
    assert history.report.left_out == [f"m{i}" for i in range(1, 7)]
    assert history.report.to_metadata()["leftOut"] == 6
    assert history.report.tokens == tokens.messages(history.messages) <= 2 * each + 20 + 3
    huge = message(1, "user", parts=[{"type": "text", "text": "y" * 10_000}], content="y" * 10_000)
    assert len(history_messages([huge], budget_tokens=10)) == 1  # the newest message always fits


def test_every_stored_message_is_marked_with_its_id() -> None:
    result = history_messages([USER, ANSWER])
    assert [message_id_of(m) for m in result] == ["m1", "m2", None, None]


def _steps(n: int) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for k in range(n):
        parts.append({"type": "step-start"})
        parts.append(
            {"type": "tool-read", "toolCallId": f"c{k}", "state": "output-available", "input": {"k": k}, "output": k}
        )
    return parts


def test_the_next_turn_starts_from_the_newest_summary() -> None:
    summary = {
        "type": "data-context-summary",
        "id": "summary-r1-1",
        "data": {
            "summary": "The user asked for six reads; five are done.",
            "index": 1,
            "runId": "r1",
            "throughMessageId": "m1",
            "keptFromStep": 4,
        },
    }
    long_run = message(2, "assistant", parts=[*_steps(4), summary, *_steps(6)[8:]], content="")
    follow_up = message(3, "user", parts=[{"type": "text", "text": "and the sixth?"}], content="and the sixth?")
    history = turn_history([USER, long_run, follow_up])
    result = wire(history.messages)
    assert result[0]["role"] == "user" and "six reads" in result[0]["content"][0]["text"]
    assert summary_of(history.messages[0]) is not None
    calls = [p["toolCallId"] for m in result if m["role"] == "assistant" for p in m["content"]]
    assert calls == ["c4", "c5"]  # the steps before keptFromStep are in the summary
    assert unpaired_calls(history.messages) == []
    assert result[-1]["content"] == [{"type": "text", "text": "and the sixth?"}]
    assert history.report.summarized_through == "m1" and history.report.left_out == []
