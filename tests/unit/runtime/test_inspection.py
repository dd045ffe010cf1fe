"""The inspector's step records: what a step sent again is stored as a reference, and reads back whole."""

from __future__ import annotations

import json
from typing import Any

from stepline.loop.state import LoopState, StepOutcome
from stepline.runtime.inspection import KEYFRAME_EVERY, resolve_requests, step_fields, window_start
from stepline.store.records import StepRecordRow

TOOLS = [{"type": "function", "name": "weather", "inputSchema": {"type": "object", "properties": {"city": {}}}}]
SYSTEM = [{"role": "system", "content": "Be brief."}]


def _message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def _request(messages: list[dict[str, Any]], tools: list[dict[str, Any]] = TOOLS) -> dict[str, Any]:
    return {"provider": "p", "model": "m", "instructions": SYSTEM, "messages": messages, "tools": tools, "settings": {}}


def _row(index: int, request: dict[str, Any], previous: list[StepRecordRow]) -> StepRecordRow:
    outcome = StepOutcome(
        "continue",
        LoopState(run_id="r", message_id="m", started_at=0, messages=[]),
        inspection={"request": request, "response": None, "attempts": [], "startedAt": index, "endedAt": index + 1},
    )
    fields = step_fields(outcome, index, previous[window_start(index) :], queued=index)
    return StepRecordRow(user_id="u", run_id="r", step_index=index, **fields)


def test_each_step_stores_what_is_new_and_reads_back_as_sent() -> None:
    sent = [
        _request([_message("user", "weather?")]),
        _request([_message("user", "weather?"), _message("assistant", "calling"), _message("tool", "sunny")]),
        _request(
            [
                _message("user", "weather?"),
                _message("assistant", "calling"),
                _message("tool", "sunny"),
                _message("assistant", "ok"),
            ]
        ),
    ]
    rows: list[StepRecordRow] = []
    for index, request in enumerate(sent):
        rows.append(_row(index, request, list(rows)))
    assert resolve_requests(rows) == sent
    second = rows[1].request or {}
    assert second["messages"] == {"sameAs": 0, "count": 1, "plus": sent[1]["messages"][1:]}
    assert second["tools"] == {"sameAs": 0} and second["instructions"] == {"sameAs": 0}
    assert (rows[2].request or {})["messages"] == {"sameAs": 1, "count": 3, "plus": sent[2]["messages"][3:]}
    # Stored, the later steps are a fraction of what they sent.
    assert len(json.dumps(rows[2].request)) < len(json.dumps(sent[2])) / 2


def test_a_rewritten_history_or_changed_tools_are_stored_whole() -> None:
    first = _request([_message("user", "a"), _message("assistant", "b")])
    rewritten = _request([_message("user", "summary of a and b")], tools=[*TOOLS, {"type": "function", "name": "x"}])
    rows = [_row(0, first, [])]
    rows.append(_row(1, rewritten, list(rows)))
    stored = rows[1].request or {}
    assert stored["messages"] == rewritten["messages"] and stored["tools"] == rewritten["tools"]
    assert stored["instructions"] == {"sameAs": 0}
    assert resolve_requests(rows) == [first, rewritten]


def test_a_step_without_a_recorded_request_reads_back_as_none() -> None:
    rows = [StepRecordRow(user_id="u", run_id="r", step_index=0, started_at=0)]
    rows.append(_row(1, _request([_message("user", "x")]), list(rows)))
    assert resolve_requests(rows) == [None, _request([_message("user", "x")])]


def test_a_long_run_writes_each_step_from_the_few_records_since_the_last_whole_request() -> None:
    history = [_message("user", "go")]
    sent: list[dict[str, Any]] = []
    rows: list[StepRecordRow] = []
    for index in range(3 * KEYFRAME_EVERY + 3):
        sent.append(_request(list(history)))
        rows.append(_row(index, sent[-1], list(rows)))  # _row hands it only rows[window_start(index):]
        history += [_message("assistant", f"call {index}"), _message("tool", f"result {index}")]
    assert resolve_requests(rows) == sent  # read back whole, over every keyframe
    whole = [row.step_index for row in rows if isinstance((row.request or {}).get("messages"), list)]
    assert whole == list(range(0, len(rows), KEYFRAME_EVERY))
    assert all(index - window_start(index) <= KEYFRAME_EVERY for index in range(1, 500))


def test_a_reference_to_a_step_that_was_not_read_resolves_to_none_not_to_a_wrong_request() -> None:
    first = _request([_message("user", "a")])
    second = _request([_message("user", "a"), _message("assistant", "b")])
    rows = [_row(1, first, []), _row(2, second, [])]
    rows[1] = _row(2, second, [rows[0]])
    assert resolve_requests(rows[1:]) == [None]  # step 1 was not read: the reference cannot be followed
    assert resolve_requests(rows) == [first, second]
