from __future__ import annotations

import pytest

from tests.support.aws_env import use_fake_aws


@pytest.fixture(autouse=True)
def fake_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_aws(monkeypatch)
