"""Every route that reads a JSON body reads it one way (`CheckedRoute`), and a number that overflows a
double — `1e999999`, an integer of 400 digits — is the 400 the other refusals are, never a 500.

`JSON.parse` reads such a number as `Infinity`, which no JSON can carry back; `POST /api/chat` with
`{"a":1e999999}` was a 500 (`Out of range float values are not JSON compliant` in the Unicode
check). The fuzz test here places overflowing and non-finite numbers anywhere in a body, on every
route with a body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepline.api.bodies import CheckedRoute
from tests.support.server import Running, config, running

OVERFLOWING = ("1e999999", "-1e400", "1E309", "2e+308", "9" * 400, "-" + "9" * 309, "1" + "0" * 309 + ".5")
NON_FINITE = ("NaN", "Infinity", "-Infinity")
MARK = re.compile(r'"@@number:([^"@]+)@@"')


def number_text(text: str) -> str:
    """A placeholder that `as_json` turns into the raw number text (JSON values cannot hold it)."""
    return f"@@number:{text}@@"


def as_json(value: Any) -> bytes:
    return MARK.sub(lambda m: m.group(1), json.dumps(value)).encode()


BAD_NUMBERS = st.sampled_from(OVERFLOWING + NON_FINITE).map(number_text)
LEAVES = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5)
)


@st.composite
def with_a_bad_number(draw: st.DrawFn) -> Any:
    """A JSON value with at least one overflowing or non-finite number somewhere in it."""
    bad = draw(BAD_NUMBERS)
    containers = lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)  # noqa: E731
    value = draw(st.recursive(LEAVES | st.just(bad), containers, max_leaves=8))
    return {"id": "x", "messages": [], "approved": True, "token": "t", "prompt": "p", "extra": [value, bad]}


@pytest.fixture(scope="module")
def live() -> Iterator[Running]:
    with running(config()) as server:
        yield server


def _api_routes(app: Any) -> list[APIRoute]:
    found: list[APIRoute] = []
    for route in app.routes:
        original = getattr(route, "original_router", None)
        found += [r for r in (original.routes if original is not None else [route]) if isinstance(r, APIRoute)]
    return found


READS_ITS_OWN_BODY = {"/api/chat"}
"""Routes that parse their body themselves (`read_json`), so FastAPI knows of no body field."""


def _body_routes(app: Any) -> list[APIRoute]:
    """The routes that take a JSON body (POST /api/runs/{id}/abort takes none)."""
    return [r for r in _api_routes(app) if r.body_field is not None or r.path in READS_ITS_OWN_BODY]


def test_every_route_with_a_body_parses_it_with_the_checked_parse(live: Running) -> None:
    routes = _body_routes(live.server.app)
    assert {r.path for r in routes} >= {"/api/chat", "/api/completion", "/api/object", "/api/approvals/{approval_id}"}
    posting = [r for r in _api_routes(live.server.app) if r.methods & {"POST", "PUT", "PATCH"}]
    assert [r.path for r in posting if not isinstance(r, CheckedRoute)] == []


def _post(client: httpx.Client, path: str, body: bytes) -> httpx.Response:
    url = re.sub(r"\{[^}]+\}", "x1", path)
    return client.post(url, content=body, headers={"content-type": "application/json"})


@pytest.mark.parametrize("number", OVERFLOWING + NON_FINITE)
def test_an_overflowing_or_non_finite_number_is_a_400_on_every_route(live: Running, number: str) -> None:
    with live.client() as client:
        for route in _body_routes(live.server.app):
            answer = _post(client, route.path, f'{{"a":{number}}}'.encode())
            assert answer.status_code == 400, (route.path, answer.status_code, answer.text[:200])
            assert "not JSON" in answer.json()["error"]["message"]


@settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(value=with_a_bad_number(), which=st.integers(min_value=0, max_value=100))
def test_a_bad_number_anywhere_in_any_body_is_a_400(live: Running, value: Any, which: int) -> None:
    routes = _body_routes(live.server.app)
    route = routes[which % len(routes)]
    with live.client() as client:
        answer = _post(client, route.path, as_json(value))
    assert answer.status_code == 400, (route.path, answer.status_code, answer.text[:200])
