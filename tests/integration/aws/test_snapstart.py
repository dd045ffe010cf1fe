"""SnapStart hooks, run the way the Lambda runtime runs them (the real `snapshot_restore_py` registry).

Before the snapshot the model step imports its provider's SDK and botocore's client machinery
and reads no secret; after a restore nothing made before the snapshot survives that must differ
per environment: the cached services and their clients, boto3's session and its credentials,
the Event API connections, the state of `random`.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import snapshot_restore_py
from moto import mock_aws

from stepline.aws import snapstart
from stepline.aws.wiring import services_from_env, worker_handler
from stepline.local.resources import create_tables
from stepline.runtime.handle_end import finalize_run_handler
from stepline.runtime.handle_model_step import model_step_handler
from tests.integration.aws.test_wiring import ENV


def _run(registry: list[Any]) -> None:
    for function, args, kwargs in list(registry):  # as the runtime calls them
        function(*args, **kwargs)


@pytest.fixture
def hooks(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[Any], list[Any]]]:
    before, after = snapshot_restore_py.get_before_snapshot(), snapshot_restore_py.get_after_restore()
    saved = (list(before), list(after))
    before.clear()
    after.clear()
    for key, value in {**ENV, "AWS_DEFAULT_REGION": "us-east-1", "STEPLINE_SNAPSTART": "1"}.items():
        monkeypatch.setenv(key, value)
    services_from_env.cache_clear()
    yield before, after
    before[:], after[:] = saved
    services_from_env.cache_clear()


def test_without_snapstart_no_hook_is_registered(
    hooks: tuple[list[Any], list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STEPLINE_SNAPSTART")
    worker_handler("stepline-model-step", model_step_handler)
    assert hooks == ([], [])


def test_priming_imports_the_providers_sdk_and_reads_no_secret(hooks: tuple[list[Any], list[Any]]) -> None:
    before, after = hooks
    sys.modules.pop("stepline.llm.openai", None)
    worker_handler("stepline-model-step", model_step_handler)
    assert len(before) == 1 and [f for f, _, _ in after] == [snapstart.after_restore]
    with mock_aws():  # no SSM parameter exists: reading the key would fail, and it is not read
        _run(before)
        assert "stepline.llm.openai" in sys.modules
        assert boto3.DEFAULT_SESSION is None, "no session (and no credentials) in the snapshot"
        assert services_from_env.cache_info().currsize == 0, "no services, no clients, no key"


def test_a_restore_forgets_the_services_the_session_and_the_random_state(hooks: tuple[list[Any], list[Any]]) -> None:
    _, after = hooks
    worker_handler("stepline-finalize-run", finalize_run_handler)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_tables(client, {"AgentTable": ENV["STEPLINE_AGENT_TABLE"], "EventsTable": ENV["STEPLINE_EVENTS_TABLE"]})
        boto3.client("ssm", region_name="us-east-1").put_parameter(
            Name=ENV["STEPLINE_OPENAI_KEY_PARAMETER"], Value="sk-test-123", Type="SecureString"
        )
        services_from_env()  # as if an invocation had run before the snapshot
        assert services_from_env.cache_info().currsize == 1
        boto3.setup_default_session()
        random.seed(7)
        drawn = random.random()
        random.seed(7)  # the state every restored environment would share
        _run(after)
        assert services_from_env.cache_info().currsize == 0
        assert boto3.DEFAULT_SESSION is None
        assert random.random() != drawn, "reseeded from the OS"


def test_a_failing_prime_does_not_fail_the_init(
    hooks: tuple[list[Any], list[Any]], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    before, _ = hooks
    monkeypatch.setenv("STEPLINE_AGENT", "no_such_module:agent")
    worker_handler("stepline-model-step", model_step_handler)
    _run(before)  # the first invocation reports the configuration error, named
    assert "priming before the snapshot failed" in caplog.text
