from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from stepline.llm.base import ModelCapabilities
from stepline.llm.errors import ModelCallError, parse_retry_after
from stepline.llm.stream_parts import parse_stream_part


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (429, "rate_limit", True),
        (529, "overloaded", True),
        (500, "server", True),
        (503, "server", True),
        (408, "timeout", True),
        (400, "bad_request", False),
        (401, "auth", False),
        (403, "auth", False),
        (404, "not_found", False),
    ],
)
def test_status_classification(status: int, kind: str, retryable: bool) -> None:
    error = ModelCallError.from_status(status, "x", provider="p")
    assert (error.kind, error.retryable, error.status_code) == (kind, retryable, status)


def test_retry_after_forms() -> None:
    assert parse_retry_after("1.5") == 1.5
    assert parse_retry_after("250", milliseconds=True) == 0.25
    assert parse_retry_after(None) is None
    assert parse_retry_after("-3") is None
    assert parse_retry_after("soon") is None
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    seconds = parse_retry_after(future)
    assert seconds is not None and 25 <= seconds <= 30


def test_capabilities_match_exact_major_and_wildcard_types() -> None:
    caps = ModelCapabilities(input_media_types=("image/*", "application/pdf"))
    assert caps.accepts("image/png") and caps.accepts("application/pdf") and caps.accepts("image/*")
    assert not caps.accepts("audio/wav") and not caps.accepts("text/csv") and not caps.accepts("audio/*")
    assert ModelCapabilities(input_media_types=("*/*",)).accepts("video/mp4")
    assert not ModelCapabilities(input_media_types=()).accepts("image/png")


def test_stream_parts_parse_from_the_sdk_json_shape() -> None:
    finish = parse_stream_part(
        {
            "type": "finish",
            "finishReason": {"unified": "length", "raw": "max_tokens"},
            "usage": {"inputTokens": {"total": 3}, "outputTokens": {}},
        }
    )
    assert finish.type == "finish"
    assert finish.usage.input_tokens.total == 3 and finish.usage.output_tokens.total is None  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        parse_stream_part({"type": "tool-call", "toolCallId": "c"})


def test_wire_forms_of_parts() -> None:
    from stepline.llm.stream_parts import V4Error, V4TextDelta, V4Usage

    assert V4Usage().to_wire() == {"inputTokens": {}, "outputTokens": {}}
    assert V4TextDelta(id="t", delta="x", provider_metadata=None).to_wire() == {
        "type": "text-delta",
        "id": "t",
        "delta": "x",
    }
    error = ModelCallError(
        "quota gone", kind="rate_limit", provider="openai", code="insufficient_quota", retryable=False
    )
    assert V4Error(error=error).to_wire() == {
        "type": "error",
        "error": {"name": "ModelCallError", "message": "quota gone"},
    }
    assert V4Error(error={"code": "x"}).to_wire() == {"type": "error", "error": {"code": "x"}}
    assert (error.code, error.retryable) == ("insufficient_quota", False)
    forced = ModelCallError.from_status(429, "quota", provider="openai", code="insufficient_quota", retryable=False)
    assert (forced.kind, forced.retryable, forced.code) == ("rate_limit", False, "insufficient_quota")
