from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.sdk_oracle import SdkOracle


@pytest.fixture(scope="session")
def sdk() -> Iterator[SdkOracle]:
    """The real `ai@7.0.173`, driven over a JSON-lines pipe."""
    oracle = SdkOracle()
    yield oracle
    oracle.close()
