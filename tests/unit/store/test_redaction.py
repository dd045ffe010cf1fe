"""Redaction: sensitive keys, secrets inside strings, configured fields, parts, reasoning retention, logging."""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from stepline.store.redaction import RedactingFilter, Redactor
from stepline.store.stored_parts import redact_parts, strip_reasoning

MASK = "*****"


@pytest.mark.parametrize(
    "key",
    [
        "authorization",
        "Authorization",
        "Proxy-Authorization",
        "cookie",
        "Cookie",
        "set-cookie",
        "Set-Cookie",
        "x-api-key",
        "X-API-Key",
        "api_key",
        "apiKey",
        "API_KEY",
        "access_token",
        "accessToken",
        "refresh_token",
        "refreshToken",
        "id_token",
        "idToken",
        "password",
        "Password",
        "secret",
        "client_secret",
        "clientSecret",
        "token",
        "Token",
    ],
)
def test_every_sensitive_key_is_masked_at_any_depth(key: str) -> None:
    value = {"outer": [{"headers": {key: "opaque-value", "accept": "text/plain"}}]}
    assert Redactor().redact(value) == {"outer": [{"headers": {key: MASK, "accept": "text/plain"}}]}


@pytest.mark.parametrize(
    "key", ["tokens", "max_tokens", "inputTokens", "tokenCount", "token_type", "secretary", "cookies_ok"]
)
def test_only_the_exact_names_match(key: str) -> None:
    assert Redactor().redact({key: "kept"}) == {key: "kept"}


def test_a_sensitive_key_masks_its_whole_value_whatever_its_type() -> None:
    redacted = Redactor().redact({"cookie": {"session": "abc", "n": 1}, "password": 1234, "secret": ["a", "b"]})
    assert redacted == {"cookie": MASK, "password": MASK, "secret": MASK}


def test_configured_fields_are_masked_too_and_the_mask_is_configurable() -> None:
    redactor = Redactor(fields=("ssn", "Phone-Number"), mask="[redacted]")
    value = {"ssn": "123-45-6789", "phone_number": "+1 555", "name": "Ann", "password": "pw"}
    assert redactor.redact(value) == {
        "ssn": "[redacted]",
        "phone_number": "[redacted]",
        "name": "Ann",
        "password": "[redacted]",
    }
    assert Redactor().redact({"ssn": "123-45-6789"}) == {"ssn": "123-45-6789"}  # not configured: kept


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "curl -H 'Authorization: Bearer eyJhbGciOi.eyJzdWIi.c2lnbmF0dXJl' url",
            f"curl -H 'Authorization: Bearer {MASK}' url",
        ),
        ("bearer abcdefgh1234==", f"bearer {MASK}"),
        ("BeArEr abcdefgh1234", f"BeArEr {MASK}"),  # any case, as the pattern (and its quick pre-test)
        ("x" * 200_000 + " sk-abcdefghijklmnop1234", "x" * 200_000 + f" {MASK}"),  # far into a long output
        ("key=sk-proj-AbCdEfGhIjKlMnOpQrStUvWx123 end", f"key={MASK} end"),
        ("OPENAI_API_KEY=sk-abcdefghijklmnop1234", f"OPENAI_API_KEY={MASK}"),
        ("x sk-ant-api03-AbCdEfGh_IjKl-MnOp y", f"x {MASK} y"),
        ("id AKIAIOSFODNN7EXAMPLE in config", f"id {MASK} in config"),
        ("temp ASIAY34FZKBOKMUTVV7A!", f"temp {MASK}!"),
    ],
)
def test_secrets_inside_strings_are_masked(text: str, expected: str) -> None:
    assert Redactor().redact(text) == expected
    assert Redactor().redact({"stdout": [text]}) == {"stdout": [expected]}


@pytest.mark.parametrize(
    "text",
    [
        "the bearer of bad news",
        "pip install scikit-learn; ask-questions-later-please",
        "AKIA is a prefix, AKIAshort is not a key",
        "sk-short",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Redactor().redact(text) == text


def test_redact_never_mutates_its_input_and_shares_no_containers() -> None:
    value: dict[str, Any] = {
        "headers": {"Authorization": "Bearer abcdefghijk"},
        "list": [{"token": "t"}],
        "tuple": ("x",),
    }
    before = copy.deepcopy(value)
    redacted = Redactor().redact(value)
    assert value == before
    assert redacted["list"] is not value["list"]
    assert redacted["tuple"] == ("x",)
    redacted["list"].append("more")
    assert value["list"] == [{"token": "t"}]


def test_other_values_pass_through_and_cycles_end() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert Redactor().redact(loop) == [1, "<cycle>"]
    assert Redactor().redact({"n": 1.5, "b": True, "x": None}) == {"n": 1.5, "b": True, "x": None}


def test_redact_parts_masks_tool_fields_approvals_and_data_and_text_by_shape_only() -> None:
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": "my token is sk-abcdefghijklmnop1234, my password is hunter2"},
        {
            "type": "dynamic-tool",
            "toolName": "web_fetch",
            "toolCallId": "call_1",
            "state": "output-error",
            "input": {"url": "https://x", "headers": {"Cookie": "sid=1"}},
            "rawInput": '{"api_key": "abc"} Bearer abcdefghijk',
            "errorText": "401 for Bearer abcdefghijklmnop",
        },
        {
            "type": "tool-login",
            "toolCallId": "call_2",
            "state": "output-available",
            "input": {"user": "ann", "password": "hunter2"},
            "output": {"access_token": "abc", "expires_in": 3600},
            "approval": {"id": "ap1", "approved": True, "reason": "ok, key AKIAABCDEFGHIJKLMNOP"},
        },
        {"type": "data-credentials", "id": "d1", "data": {"refresh_token": "r", "scope": "read"}},
    ]
    before = copy.deepcopy(parts)
    redacted = redact_parts(parts)
    assert parts == before
    # the conversation's text: credentials by shape only, as the event log's text deltas
    assert redacted[0]["text"] == f"my token is {MASK}, my password is hunter2"
    assert redacted[1]["input"] == {"url": "https://x", "headers": {"Cookie": MASK}}
    # raw JSON text is masked as the streamed tool input is: by key too
    assert redacted[1]["rawInput"] == f'{{"api_key": "{MASK}"}} Bearer {MASK}'
    assert redacted[1]["errorText"] == f"401 for Bearer {MASK}"
    assert redacted[1]["toolCallId"] == "call_1"
    assert redacted[2]["input"] == {"user": "ann", "password": MASK}
    assert redacted[2]["output"] == {"access_token": MASK, "expires_in": 3600}
    assert redacted[2]["approval"] == {"id": "ap1", "approved": True, "reason": f"ok, key {MASK}"}
    assert redacted[3] == {"type": "data-credentials", "id": "d1", "data": {"refresh_token": MASK, "scope": "read"}}


def test_redact_parts_uses_the_given_redactor() -> None:
    parts = [{"type": "tool-x", "toolCallId": "c", "state": "input-available", "input": {"email": "a@b.c"}}]
    assert redact_parts(parts, Redactor(fields=["email"]))[0]["input"] == {"email": MASK}
    assert redact_parts(parts)[0]["input"] == {"email": "a@b.c"}


def _reasoning_parts() -> list[dict[str, Any]]:
    return [
        {"type": "step-start"},
        {
            "type": "reasoning",
            "text": "first I think",
            "state": "done",
            "providerMetadata": {"anthropic": {"signature": "sig1"}},
        },
        {"type": "text", "text": "answer"},
        {"type": "reasoning", "text": "then more", "providerMetadata": {"openai": {"itemId": "rs_1"}}},
    ]


def test_drop_text_blanks_reasoning_but_keeps_order_state_and_signatures() -> None:
    parts = _reasoning_parts()
    stripped = strip_reasoning(parts, "drop_text")
    assert stripped == [
        {"type": "step-start"},
        {"type": "reasoning", "text": "", "state": "done", "providerMetadata": {"anthropic": {"signature": "sig1"}}},
        {"type": "text", "text": "answer"},
        {"type": "reasoning", "text": "", "providerMetadata": {"openai": {"itemId": "rs_1"}}},
    ]
    assert parts == _reasoning_parts()  # the input is not changed


def test_keep_keeps_reasoning_as_it_was_and_unknown_policies_are_refused() -> None:
    assert strip_reasoning(_reasoning_parts(), "keep") == _reasoning_parts()
    with pytest.raises(ValueError, match="unknown reasoning policy 'forever'"):
        strip_reasoning(_reasoning_parts(), "forever")  # type: ignore[arg-type]


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.lines.append(self.format(record))


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, _Capture]]:
    logger = logging.getLogger("stepline.tests.redaction")
    handler = _Capture()
    handler.addFilter(RedactingFilter(Redactor(fields=["ssn"])))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, handler
    logger.removeHandler(handler)


def test_the_filter_masks_dict_messages_args_and_extra_fields(captured: tuple[logging.Logger, _Capture]) -> None:
    logger, handler = captured
    headers = {"Authorization": "Bearer abcdefghijklmnop", "accept": "*/*"}
    logger.info({"event": "request", "headers": headers})
    logger.info("request headers %s from %s", headers, "AKIAIOSFODNN7EXAMPLE")
    logger.info("user %(user)s", {"user": "ann", "ssn": "123"})
    logger.info("done", extra={"cookie": "sid=1", "payload": {"api_key": "k", "n": 1}})

    assert handler.records[0].msg == {"event": "request", "headers": {"Authorization": MASK, "accept": "*/*"}}
    assert handler.lines[1] == f"request headers {{'Authorization': '{MASK}', 'accept': '*/*'}} from {MASK}"
    assert handler.records[2].args == {"user": "ann", "ssn": MASK}
    assert handler.lines[2] == "user ann"
    assert vars(handler.records[3])["cookie"] == MASK
    assert vars(handler.records[3])["payload"] == {"api_key": MASK, "n": 1}
    assert headers["Authorization"] == "Bearer abcdefghijklmnop"  # the caller's object is not changed


def test_the_filter_masks_secrets_in_plain_messages(captured: tuple[logging.Logger, _Capture]) -> None:
    logger, handler = captured
    logger.warning("retrying with key sk-ant-api03-AAAAAAAAAAAAAAAA")
    assert handler.lines == [f"retrying with key {MASK}"]


def test_a_store_can_drop_reasoning_text_but_keeps_the_part_and_its_signature() -> None:
    from stepline.store.memory import MemoryStore
    from stepline.store.ports import SnapshotUpdate, TurnStart

    store = MemoryStore(reasoning="drop_text")
    store.start_turn(
        "u", TurnStart(conversation_id="c", run_id="r", assistant_message_id="a", user_message=None, now=1)
    )
    store.mark_running("u", "r", now=1)
    parts = [
        {
            "type": "reasoning",
            "text": "private chain of thought",
            "providerMetadata": {"anthropic": {"signature": "sig"}},
        },
        {"type": "text", "text": "answer"},
    ]
    store.save_snapshot("u", "r", SnapshotUpdate(parts=parts, metadata=None, snapshot_seq=1), now=2)
    stored = store.get_message("u", "c", "a").parts
    assert stored[0] == {"type": "reasoning", "text": "", "providerMetadata": {"anthropic": {"signature": "sig"}}}
    assert stored[1] == {"type": "text", "text": "answer"}
