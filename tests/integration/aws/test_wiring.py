"""The functions' services built from the environment template.yaml gives them, on moto."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from stepline.aws.wiring import ConfigurationError, Settings, build_services, worker_handler
from stepline.llm.openai import OpenAIModel
from stepline.llm.registry import DeferredModel
from stepline.local.resources import create_tables
from stepline.runtime.handlers import HANDLER_NAMES
from stepline.store.errors import NotFound

REPO = Path(__file__).resolve().parents[3]
ENV = {
    "STEPLINE_AGENT_TABLE": "stepline-agent",
    "STEPLINE_EVENTS_TABLE": "stepline-events",
    "STEPLINE_BUCKET": "stepline-artifacts",
    "STEPLINE_MODEL": "openai:gpt-5.1",
    "STEPLINE_TOOLS": "stepline.tools.demo",
    "STEPLINE_APPROVAL_TIMEOUT_SECONDS": "600",
    "STEPLINE_EVENT_RETENTION_DAYS": "3",
    "STEPLINE_OPENAI_KEY_PARAMETER": "/stepline/test/openai-api-key",
    "STEPLINE_ANTHROPIC_KEY_PARAMETER": "",  # CloudFormation sets unused parameters to ""
    "UNRELATED": "ignored",
}


def _client(service: str) -> Any:
    return boto3.client(service, region_name="us-east-1")


def test_a_missing_or_malformed_variable_is_named() -> None:
    broken = {**ENV, "STEPLINE_MODEL": "gpt-5.1", "STEPLINE_APPROVAL_TIMEOUT_SECONDS": "0"}
    del broken["STEPLINE_EVENTS_TABLE"]
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_env(broken)
    message = str(caught.value)
    for name in ("STEPLINE_EVENTS_TABLE", "STEPLINE_MODEL", "STEPLINE_APPROVAL_TIMEOUT_SECONDS"):
        assert name in message


def test_services_read_the_key_from_ssm_and_use_the_tables() -> None:
    with mock_aws():
        create_tables(_client("dynamodb"), {"AgentTable": "stepline-agent", "EventsTable": "stepline-events"})
        _client("s3").create_bucket(Bucket="stepline-artifacts")
        _client("ssm").put_parameter(
            Name=ENV["STEPLINE_OPENAI_KEY_PARAMETER"], Value="sk-test-123", Type="SecureString"
        )
        services = build_services(Settings.from_env(ENV), client=_client, model_now=True)
        assert isinstance(services.model, OpenAIModel) and services.model.api_key == "sk-test-123"
        deferred = build_services(Settings.from_env(ENV), client=_client).model  # what the other functions get
        assert isinstance(deferred, DeferredModel) and deferred.resolved is None
        assert isinstance(deferred.model(), OpenAIModel) and deferred.model().api_key == "sk-test-123"
        assert {t.name for t in services.tools} == {"get_weather", "delete_file"}
        assert services.tool_approval == {"delete_file": "user-approval"}
        assert services.approval_timeout_ms == 600_000 and services.orchestrator is None
        assert services.store.delta_retention_ms == 3 * 24 * 3600 * 1000
        with pytest.raises(NotFound):  # the real tables answer
            services.store.get_conversation("u1", "missing")


def test_an_unreadable_key_fails_without_showing_anything_secret() -> None:
    with mock_aws():
        with pytest.raises(ConfigurationError) as caught:
            build_services(Settings.from_env(ENV), client=_client)
        assert "/stepline/test/openai-api-key" in str(caught.value) and "ParameterNotFound" in str(caught.value)


@pytest.mark.parametrize("name", HANDLER_NAMES)
def test_each_function_entry_point_binds_its_worker(name: str) -> None:
    directory = name.removeprefix("stepline-").replace("-", "_")
    spec = importlib.util.spec_from_file_location(f"app_{directory}", REPO / "functions" / directory / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # binding is lazy: no AWS call at import
    assert module.handler.__name__ == worker_handler(name).__name__
    assert module.handler.__name__ == name.removeprefix("stepline-").replace("-", "_")
    assert "app_" + directory not in sys.modules  # not left behind for other tests
