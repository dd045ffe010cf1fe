"""`parse_json_body`: the one place a request body becomes JSON, with depth and Unicode checked first."""

from __future__ import annotations

import pytest

from stepline.errors import InvalidUIMessageError
from stepline.protocol.json_limits import MAX_DEPTH, check_json_value, json_path, parse_json_body


def issue_of(data: bytes | str) -> tuple[str, str]:
    with pytest.raises(InvalidUIMessageError) as error:
        parse_json_body(data)
    [issue] = error.value.issues
    return issue


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_a_well_formed_body_is_parsed_as_json_parse_would() -> None:
    body = '{"id":"c","messages":[{"text":"h\\u00e9 \\ud83d\\ude00","n":[1,2.5,null,true]}]}'
    assert parse_json_body(body.encode()) == {"id": "c", "messages": [{"text": "hé 😀", "n": [1, 2.5, None, True]}]}


@pytest.mark.parametrize(
    ("data", "path", "reason"),
    [
        (b'{"id": "\xff"}', "body", "not UTF-8"),
        (b'{"id": ', "body", "not JSON"),
        (b'{"n": NaN}', "body", "not JSON"),
        (b'{"a":1e999999}', "body", "too large for a double"),  # JSON.parse: Infinity, which no JSON carries back
        (b'{"a":[-1E309]}', "body", "too large for a double"),
        ('{"a":' + "9" * 400 + "}", "body", "too large for a double"),
        (nested(100_000).encode(), "body", f"deeper than {MAX_DEPTH}"),  # RecursionError in the parser
        ('{"a":' + nested(MAX_DEPTH) + "}", "a" + "[0]" * (MAX_DEPTH - 1), f"deeper than {MAX_DEPTH}"),
        ('{"messages":[{"parts":[{"text":"\\ud800"}]}]}', "messages[0].parts[0].text", "lone surrogate"),
        ('{"messages":[{"id":"ok \\udc00"}]}', "messages[0].id", "lone surrogate"),
        ('{"metadata":{"\\ud800":1}}', "metadata", "key that is not valid Unicode"),
        ('{"a b":["\\ud800"]}', "['a b'][0]", "lone surrogate"),
    ],
)
def test_what_would_fail_later_is_refused_here_naming_where(data: bytes | str, path: str, reason: str) -> None:
    where, why = issue_of(data)
    assert where == path and reason in why


def test_the_largest_doubles_are_numbers_still() -> None:
    assert parse_json_body('{"a":1.7976931348623157e308,"b":1e-999,"c":"1e999"}') == {
        "a": 1.7976931348623157e308,
        "b": 0.0,
        "c": "1e999",
    }
    assert parse_json_body("[1" + "0" * 308 + "]") == [10**308]


def test_the_depth_limit_is_exact() -> None:
    parse_json_body(nested(MAX_DEPTH))
    assert "deeper" in issue_of(nested(MAX_DEPTH + 1))[1]
    check_json_value([[["x"]]], max_depth=3)
    with pytest.raises(InvalidUIMessageError):
        check_json_value([[[[]]]], max_depth=3)


def test_paths_read_like_the_sdk_validation_paths() -> None:
    assert json_path(("messages", 0, "parts", 1, "text")) == "messages[0].parts[1].text"
    assert json_path(()) == "body"
    assert json_path((0, "x-y"), root="messages") == "messages[0]['x-y']"
