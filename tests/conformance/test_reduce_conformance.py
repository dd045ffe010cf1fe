"""The reducer gives what the real `readUIMessageStream` gives, snapshot count and errors included."""

from __future__ import annotations

from typing import Any

import pytest

from stepline.errors import UIMessageStreamError
from stepline.protocol.chunks import parse_chunk
from stepline.protocol.reducer import read_ui_message_stream
from tests.conformance.reduce_cases import CASES, LOOSE_CITATIONS, START
from tests.support.sdk_oracle import SdkOracle


def reduce_with_stepline(chunks: list[dict[str, Any]], message: dict[str, Any] | None) -> dict[str, Any]:
    errors: list[dict[str, Any]] = []

    def on_error(error: Exception) -> None:
        if isinstance(error, UIMessageStreamError):
            errors.append(
                {
                    "name": "AI_UIMessageStreamError",
                    "message": str(error),
                    "chunkType": error.chunk_type,
                    "chunkId": error.chunk_id,
                }
            )
        else:
            errors.append({"name": "Error", "message": str(error)})

    snapshots = list(read_ui_message_stream([parse_chunk(c) for c in chunks], message=message, on_error=on_error))
    return {"final": snapshots[-1] if snapshots else None, "count": len(snapshots), "errors": errors}


def test_there_are_at_least_forty_cases() -> None:
    assert len(CASES) >= 40
    assert len({name for name, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("chunks", "message"), [(c, m) for _, c, m in CASES], ids=[n for n, _, _ in CASES])
def test_reducer_matches_sdk(sdk: SdkOracle, chunks: list[dict[str, Any]], message: dict[str, Any] | None) -> None:
    expected = sdk.call("reduce", chunks=chunks, message=message)
    assert reduce_with_stepline(chunks, message) == expected


@pytest.mark.parametrize("citations", [c for _, c in LOOSE_CITATIONS], ids=[n for n, _ in LOOSE_CITATIONS])
def test_text_end_citations_are_passed_through_as_the_sdk_does(sdk: SdkOracle, citations: Any) -> None:
    text_end: dict[str, Any] = {"type": "text-end", "id": "t", "citations": citations}
    chunks = [START, {"type": "text-start", "id": "t"}, {"type": "text-delta", "id": "t", "delta": "q"}, text_end]
    expected = sdk.call("reduce", chunks=chunks, message=None)
    assert reduce_with_stepline(chunks, None) == expected
    assert expected["errors"] == []


def test_every_chunk_type_is_covered() -> None:
    from typing import get_args

    from stepline.protocol import chunks as chunk_module

    union = get_args(get_args(chunk_module.UIMessageChunk)[0])
    defaults = (get_args(member)[0].model_fields["type"].default for member in union)
    declared = {d for d in defaults if isinstance(d, str)}  # DataChunk has no fixed type
    used = {c["type"] for _, case, _ in CASES for c in case}
    assert declared - used == set()
    assert any(t.startswith("data-") for t in used)


def test_every_tool_state_is_reached(sdk: SdkOracle) -> None:
    states: set[str] = set()
    for _, chunks, message in CASES:
        final = reduce_with_stepline(chunks, message)["final"]
        for part in (final or {}).get("parts", []):
            if "state" in part and part["type"] not in ("text", "reasoning"):
                states.add(part["state"])
    assert states == {
        "input-streaming",
        "input-available",
        "approval-requested",
        "approval-responded",
        "output-available",
        "output-error",
        "output-denied",
    }
