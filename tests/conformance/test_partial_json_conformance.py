"""`PartialJson` gives the SDK's `parsePartialJson` value for every prefix of realistic tool inputs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepline.protocol.partial_json import UNPARSEABLE, PartialJson, parse_partial_json
from tests.support.sdk_oracle import SdkOracle

DOCUMENTS = [
    '{"city":"Paris","units":"metric"}',
    '{"path": "/tmp/x", "content": "line1\\nline2 \\"quoted\\" \\u00e9\\u4f60", "overwrite": true}',
    '{"n":[1, -2.5e3, 0.125, 10],"nested":{"deep":[{"a":null},{"b":false}]},"e":[]}',
    '[true, false, null, "x", {"k": [ ]}, 12]',
    '  {"a" : 1 , "b" : [ 2 , 3 ] }  ',
    '"just a string with \\\\ backslash"',
    "-12.5e-3",
    '{"weird":"\\ud83d\\ude00 emoji", "k2": "tab\\t"}',
]


def sdk_form(value: Any) -> dict[str, Any]:
    return {"undefined": True} if value is UNPARSEABLE else {"value": value}


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_prefix_matches_sdk(sdk: SdkOracle, document: str) -> None:
    prefixes = [document[:i] for i in range(len(document) + 1)]
    expected = [{k: v for k, v in r.items() if k != "state"} for r in sdk.call("partialJson", texts=prefixes)]
    assert [sdk_form(parse_partial_json(p)) for p in prefixes] == expected


@pytest.mark.parametrize("document", DOCUMENTS)
def test_incremental_equals_one_shot_at_every_step(document: str) -> None:
    partial = PartialJson()
    for i, char in enumerate(document, start=1):
        partial.append(char)
        assert sdk_form(partial.value()) == sdk_form(parse_partial_json(document[:i]))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(value=json_values, cuts=st.lists(st.integers(0, 10_000), max_size=6))
def test_any_split_reads_like_the_joined_text(value: Any, cuts: list[int]) -> None:
    text = json.dumps(value)
    points = sorted({c % (len(text) + 1) for c in cuts} | {len(text)})
    partial = PartialJson()
    start = 0
    for point in points:
        partial.append(text[start:point])
        start = point
        assert sdk_form(partial.value()) == sdk_form(parse_partial_json(text[:point]))
    assert partial.value() == value
