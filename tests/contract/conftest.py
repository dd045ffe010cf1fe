"""The store contract runs against every backend: in memory, SQLite in a file, and DynamoDB on moto (template.yaml)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stepline.store.memory import MemoryStore
from stepline.store.ports import Store
from stepline.store.sqlite import SqliteStore
from tests.support.aws_env import use_fake_aws


def _memory_dump(store: MemoryStore) -> Any:
    return repr(sorted((k, sorted(v.items(), key=repr)) for k, v in store.items.items()))


@pytest.fixture(params=["memory", "sqlite", "dynamodb"])
def backend(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[tuple[Store, Callable[[], Any]]]:
    """`(store, dump)`: `dump()` returns everything stored, to prove a refused write changed nothing."""
    if request.param == "memory":
        store = MemoryStore()
        yield store, lambda: _memory_dump(store)
        return
    if request.param == "sqlite":
        sqlite = SqliteStore(tmp_path / "stepline.db")
        yield sqlite, sqlite.dump
        sqlite.close()
        return
    from moto import mock_aws

    from tests.support.dynamo_store import make_dynamo_store

    use_fake_aws(monkeypatch)
    with mock_aws():
        store, dump = make_dynamo_store()
        yield store, dump
