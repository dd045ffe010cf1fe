"""Schemathesis against the app's own OpenAPI document, over the local backend: no 5xx, and every
answer true to the document (status codes, content types, the `ErrorBody` of every refusal,
invalid input refused, unsupported methods answered 405).

Bounded and deterministic: `MAX_EXAMPLES` per operation and phase, derandomized, no deadline (about
370 requests over the 11 operations, under 20 s on a loaded 2-core machine). The model is a
scripted one that answers at once, so the time goes to generating and checking requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import allow_header_conformance, positive_data_acceptance

from tests.support.server import Running, config, running, write_book

MAX_EXAMPLES = 10
EXCLUDED = [positive_data_acceptance, allow_header_conformance]
"""Every default check but two: the documented chat body is looser than its validation on purpose
(`messages` as objects; the route validates them as the SDK does, and a 400 names what is wrong), and
Starlette's 405 lists only the methods of the first route matching a path (GET, not also DELETE)."""
ANSWER = [
    {"type": "stream-start", "warnings": []},
    {"type": "text-start", "id": "t1"},
    {"type": "text-delta", "id": "t1", "delta": "{}"},
    {"type": "text-end", "id": "t1"},
    {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}},
]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    book: Path = tmp_path_factory.mktemp("fuzz") / "book.json"
    with running(config(write_book(book, [], [{"parts": ANSWER}]))) as server:
        yield server


@pytest.fixture(scope="module")
def api_schema(live: Running) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(f"{live.url}/api/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
)
def test_every_operation_answers_as_documented_and_never_5xx(case: schemathesis.Case) -> None:
    case.call_and_validate(timeout=30, excluded_checks=EXCLUDED)
