"""Schemathesis against the app's own OpenAPI document, over the local backend: no 5xx, and every
answer true to the document (status codes, content types, the `ErrorBody` of every refusal).

Bounded and deterministic: at most `MAX_EXAMPLES` generated requests per operation (schemathesis
adds a few of its own, such as unsupported methods), derandomized, no deadline. The model is a
scripted one that answers at once, so the time goes to generating and checking requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.support.server import Running, config, running, write_book

MAX_EXAMPLES = 12
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
    case.call_and_validate(
        timeout=30,
        checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance],
    )
