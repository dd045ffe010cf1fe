"""The fake's server tool streams are what the `anthropic` SDK's own types accept.

Every event of `tests/support/anthropic_tool_streams.py` (pings aside, which the SDK's union
does not list) validates as `anthropic.types.RawMessageStreamEvent`, so the wire the tests feed
both Stepline and the AI SDK is the one the Messages API is typed to send.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import RawMessageStreamEvent
from pydantic import TypeAdapter, ValidationError

from tests.support.anthropic_tool_streams import SCENARIOS

EVENTS: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_event_of_a_scenario_is_a_typed_anthropic_stream_event(name: str) -> None:
    scenario = SCENARIOS[name]
    for reply in [*scenario.replies, scenario.follow_up]:
        for event in reply:
            if event.name != "ping":
                EVENTS.validate_python(event.data)


def test_the_check_rejects_a_search_result_without_its_encrypted_content() -> None:
    result = {"type": "web_search_result", "url": "https://a.example", "title": "A"}
    block = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [result]}
    with pytest.raises(ValidationError):
        EVENTS.validate_python({"type": "content_block_start", "index": 0, "content_block": block})
