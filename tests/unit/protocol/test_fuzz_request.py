"""Hypothesis on the pure boundary: whatever JSON arrives, parsing a chat request or converting
messages either succeeds or raises the protocol's own error, naming a path; nothing else escapes
(an escaped TypeError or pydantic error is a 500 at the HTTP edge). In process, bounded, derandomized.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stepline.errors import InvalidUIMessageError, MessageConversionError
from stepline.protocol.convert_json import convert_ui_messages_json
from stepline.protocol.json_limits import parse_json_body
from stepline.protocol.request import parse_chat_request

EXAMPLES = 150
SETTINGS = settings(
    max_examples=EXAMPLES, derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
KEYS = st.sampled_from(
    ["id", "role", "parts", "type", "text", "state", "toolCallId", "input", "output", "approval", "approved",
     "metadata", "url", "mediaType", "data", "errorText", "toolName", "providerMetadata", "citations", "x"]
)  # fmt: skip
VALUES = st.sampled_from(
    ["user", "assistant", "system", "tool", "text", "file", "tool-w", "dynamic-tool", "data-x", "reasoning",
     "step-start", "steering-message", "source-url", "input-available", "output-available", "output-error",
     "output-denied", "approval-requested", "approval-responded", "input-streaming", "javascript:x", "data:,x"]
)  # fmt: skip
JSON = st.recursive(
    SCALARS | VALUES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS | st.text(max_size=5), inner, max_size=6),
    max_leaves=30,
)
MESSAGE_LIKE = st.fixed_dictionaries(
    {"id": st.text(max_size=5) | JSON, "role": VALUES | JSON, "parts": st.lists(st.dictionaries(KEYS, JSON | VALUES))},
    optional={"metadata": JSON},
)
MESSAGES = st.lists(MESSAGE_LIKE | JSON, min_size=0, max_size=3)


def has_path(error: InvalidUIMessageError) -> bool:
    return bool(error.issues) and all(isinstance(path, str) and reason for path, reason in error.issues)


@SETTINGS
@given(messages=MESSAGES, trigger=st.sampled_from(["submit-message", "regenerate-message"]) | JSON, extra=JSON)
def test_a_chat_request_parses_or_is_refused_naming_a_path(messages: Any, trigger: Any, extra: Any) -> None:
    body = {"id": "chat", "trigger": trigger, "messages": messages, "extra": extra}
    try:
        parse_chat_request(body)
    except InvalidUIMessageError as error:
        assert has_path(error), error.issues


@SETTINGS
@given(messages=MESSAGES, ignore=st.booleans())
@example(messages=[{"id": "m", "role": "assistant", "parts": [{"type": "tool-x", "state": []}]}], ignore=True)
def test_converting_json_messages_converts_or_raises_the_protocol_errors(messages: Any, ignore: bool) -> None:
    try:
        convert_ui_messages_json(messages, ignore_incomplete_tool_calls=ignore)
    except InvalidUIMessageError as error:
        assert has_path(error), error.issues
    except MessageConversionError as error:
        assert str(error)


@SETTINGS
@given(text=st.text(max_size=60) | st.binary(max_size=60).map(lambda b: b.decode("latin-1")))
def test_any_text_is_a_body_or_a_named_refusal(text: str) -> None:
    for data in (text, text.encode("utf-8", "surrogatepass")):
        try:
            parse_json_body(data)
        except InvalidUIMessageError as error:
            assert has_path(error)
