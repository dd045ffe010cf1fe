"""Hypothesis against `POST /api/chat`: malformed UIMessages and chat bodies are 400s naming the field.

Each example takes a well-formed body (a short history, DefaultChatTransport's keys and some
`body` extras) and breaks exactly one field in one of the ways fuzzing found or the validation
boundary guards against (wrong types, ids the store cannot key, lone surrogates, non-object
metadata, script URLs in file parts, nesting past the depth limit, unknown part types and roles).
The answer must be a JSON 400 whose message names the broken field's path. A second test posts
arbitrary JSON and asks only for a 4xx. Bounded (`EXAMPLES`) and derandomized, without a deadline.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.server import Running, config, running, write_book

EXAMPLES = 150
ARBITRARY_EXAMPLES = 60
SETTINGS = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
ANSWER = [
    {"type": "stream-start", "warnings": []},
    {"type": "text-start", "id": "t1"},
    {"type": "text-delta", "id": "t1", "delta": "ok"},
    {"type": "text-end", "id": "t1"},
    {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}},
]
Json = Any


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    book: Path = tmp_path_factory.mktemp("fuzz") / "book.json"
    with running(config(write_book(book, [], [{"parts": ANSWER}]))) as server:
        yield server


@pytest.fixture(scope="module")
def client(live: Running) -> Iterator[httpx.Client]:
    with live.client() as http:
        yield http


SAFE_ID = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=24)
TEXT = st.text(max_size=40)
PART = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, TEXT),
    st.just({"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,iVBORw0KGgo="}),
    st.builds(lambda d: {"type": "data-note", "data": d}, st.dictionaries(SAFE_ID, TEXT, max_size=2)),
)


@st.composite
def chat_bodies(draw: st.DrawFn) -> dict[str, Json]:
    """A body the server would accept: history (user, assistant)* ending with a user message."""
    turns = draw(st.integers(0, 2))
    messages: list[Json] = []
    for index in range(turns):
        messages.append({"id": f"u{index}", "role": "user", "parts": [{"type": "text", "text": "q"}]})
        messages.append({"id": f"a{index}", "role": "assistant", "parts": [{"type": "text", "text": "a"}]})
    parts = draw(st.lists(PART, min_size=1, max_size=3))
    messages.append({"id": f"u{turns}", "role": "user", "parts": parts, "metadata": {"k": "v"}})
    extras = draw(st.dictionaries(st.sampled_from(["agent", "temperature", "x-extra"]), TEXT, max_size=2))
    return {**extras, "id": draw(SAFE_ID), "messages": messages, "trigger": "submit-message"}


BAD_IDS = st.one_of(
    st.just(""),
    st.text(min_size=201, max_size=400, alphabet="ab"),
    st.sampled_from(["a b", "a#b", "é", "a/b", "\ud800", "x\udfffy", "\n"]),
)
LONE_SURROGATE = st.builds(lambda a, s, b: a + s + b, TEXT, st.sampled_from(["\ud800", "\udbff", "\udc00"]), TEXT)
NOT_A_STRING = st.one_of(st.integers(), st.booleans(), st.lists(st.integers(), max_size=2), st.just({}))
NOT_AN_OBJECT = st.one_of(st.integers(), TEXT, st.lists(st.integers(), max_size=2), st.booleans())
BAD_ROLES = NOT_A_STRING | TEXT.filter(lambda r: r not in ("user", "assistant", "system"))
BAD_PART_TYPES = st.sampled_from(["txt", "tool", "", "Text", "image"])
SCRIPT_URLS = st.sampled_from(
    ["javascript:alert(1)", " JavaScript:alert(1)", "java\tscript:x", "vbscript:x", "file:///etc/passwd", "blob:x"]
)


def deep(levels: int) -> Json:
    value: Json = "x"
    for _ in range(levels):
        value = [value]
    return value


Breaker = Callable[[st.DrawFn, dict[str, Json], int, int], str]
"""Breaks one field of `body` (message `i`, part `j`) and returns the path the answer must name."""


def _set(body: dict[str, Json], key: str, value: Json) -> None:
    body[key] = value


def _message(body: dict[str, Json], i: int) -> dict[str, Json]:
    return body["messages"][i]


def _set_part(body: dict[str, Json], i: int, j: int, value: Json) -> None:
    _message(body, i)["parts"][j] = value


BREAKERS: dict[str, Breaker] = {
    "chat id": lambda d, b, i, j: _set(b, "id", d(BAD_IDS)) or "id",
    "chat id type": lambda d, b, i, j: _set(b, "id", d(NOT_A_STRING)) or "id",
    "trigger": lambda d, b, i, j: _set(b, "trigger", d(TEXT.filter(lambda t: not t.endswith("-message")))) or "trigger",
    "messageId": lambda d, b, i, j: _set(b, "messageId", d(BAD_IDS | NOT_A_STRING)) or "messageId",
    "messages type": lambda d, b, i, j: _set(b, "messages", d(st.integers() | TEXT | st.just({}))) or "messages",
    "messages empty": lambda d, b, i, j: _set(b, "messages", []) or "messages",
    "message type": lambda d, b, i, j: b["messages"].__setitem__(i, d(NOT_AN_OBJECT)) or f"messages[{i}]",
    "message id": lambda d, b, i, j: _set(_message(b, i), "id", d(BAD_IDS)) or f"messages[{i}].id",
    "message id type": lambda d, b, i, j: _set(_message(b, i), "id", d(NOT_A_STRING)) or f"messages[{i}].id",
    "role": lambda d, b, i, j: _set(_message(b, i), "role", d(BAD_ROLES)) or f"messages[{i}].role",
    "parts type": lambda d, b, i, j: _set(_message(b, i), "parts", d(st.integers() | TEXT)) or f"messages[{i}].parts",
    "part type": lambda d, b, i, j: _set_part(b, i, j, d(NOT_AN_OBJECT)) or f"messages[{i}].parts[{j}]",
    "part kind": lambda d, b, i, j: (
        _set_part(b, i, j, {"type": d(BAD_PART_TYPES), "text": "x"}) or f"messages[{i}].parts[{j}]"
    ),
    "text type": lambda d, b, i, j: (
        _set_part(b, i, j, {"type": "text", "text": d(NOT_A_STRING)}) or f"messages[{i}].parts[{j}].text"
    ),
    "text surrogate": lambda d, b, i, j: (
        _set_part(b, i, j, {"type": "text", "text": d(LONE_SURROGATE)}) or f"messages[{i}].parts[{j}].text"
    ),
    "metadata": lambda d, b, i, j: _set(_message(b, i), "metadata", d(NOT_AN_OBJECT)) or f"messages[{i}].metadata",
    "metadata deep": lambda d, b, i, j: (
        _set(_message(b, i), "metadata", {"v": deep(d(st.integers(70, 900)))}) or f"messages[{i}]"
    ),
    "metadata key": lambda d, b, i, j: (
        _set(_message(b, i), "metadata", {d(LONE_SURROGATE): 1}) or f"messages[{i}].metadata"
    ),
    "file url": lambda d, b, i, j: (
        _set_part(b, i, j, {"type": "file", "mediaType": "text/html", "url": d(SCRIPT_URLS)})
        or f"messages[{i}].parts[{j}].url"
    ),
}


@st.composite
def broken(draw: st.DrawFn) -> tuple[dict[str, Json], str]:
    """A well-formed body with one field broken, and the path the answer must name."""
    body = draw(chat_bodies())
    i = draw(st.integers(0, len(body["messages"]) - 1))
    j = draw(st.integers(0, len(body["messages"][i]["parts"]) - 1))
    path = BREAKERS[draw(st.sampled_from(sorted(BREAKERS)))](draw, body, i, j)
    return body, path


def post(client: httpx.Client, body: Json) -> httpx.Response:
    # ensure_ascii: a lone surrogate goes out as the `\ud800` escape a JavaScript client would send
    return client.post("/api/chat", content=json.dumps(body).encode(), headers={"content-type": "application/json"})


@SETTINGS
@given(case=broken())
def test_a_body_with_one_broken_field_is_a_400_naming_it(
    client: httpx.Client, case: tuple[dict[str, Json], str]
) -> None:
    body, path = case
    response = post(client, body)
    assert response.status_code == 400, (response.status_code, response.text[:300], path)
    assert response.headers["content-type"] == "application/json"
    message = response.json()["error"]["message"]
    assert path in message, (path, message)


JSON_VALUES = st.recursive(
    # infinities (sent as JSON's missing Infinity) and integers beyond a double (JSON.parse: Infinity) too
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.integers(min_value=10**308, max_value=10**400)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(SETTINGS, max_examples=ARBITRARY_EXAMPLES)
@given(value=JSON_VALUES, where=st.sampled_from(["body", "messages", "message", "part"]))
def test_arbitrary_json_anywhere_is_a_4xx_never_a_5xx(client: httpx.Client, value: Json, where: str) -> None:
    body: Json = {"id": "arbitrary", "trigger": "submit-message", "messages": [{"id": "u1", "role": "user"}]}
    match where:
        case "body":
            body = value
        case "messages":
            body["messages"] = value
        case "message":
            body["messages"] = [value]
        case _:
            body["messages"][0]["parts"] = [value]
    response = post(client, body)
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    assert response.json()["error"]["message"]
