"""The inspector's step records: what a step sent again is stored as a reference, and reads back whole."""

from __future__ import annotations

import json
from typing import Any

from stepline.loop.state import LoopState, StepOutcome
from stepline.runtime.inspection import resolve_requests, step_fields
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
    fields = step_fields(outcome, previous, queued=index)
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
