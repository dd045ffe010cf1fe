"""The functions' services built from the environment template.yaml gives them, on moto."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from stepline.aws.events import EventBridgeNotifier
from stepline.aws.secrets import KeyUnavailableError
from stepline.aws.wiring import ConfigurationError, Settings, build_services, worker_handler
from stepline.llm.openai import OpenAIModel
from stepline.llm.registry import DeferredModel
from stepline.local.resources import create_tables
from stepline.runtime.handlers import HANDLERS
from stepline.runtime.handling import HANDLER_NAMES
from stepline.runtime.notifications import NoNotifier
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
        agent = services.agent_set.default
        model = services.model_for(agent)
        assert isinstance(model, OpenAIModel) and model.api_key == "sk-test-123"
        deferred = build_services(Settings.from_env(ENV), client=_client)  # what the other functions get
        lazy = deferred.model_for(deferred.agent_set.default)
        assert isinstance(lazy, DeferredModel) and lazy.resolved is None
        assert isinstance(lazy.model(), OpenAIModel) and lazy.model().api_key == "sk-test-123"
        assert {t.name for t in agent.tools} == {"get_weather", "delete_file"}
        assert agent.tool_approval == {"delete_file": "user-approval"}
        assert services.approval_timeout_ms == 600_000 and services.orchestrator is None
        assert services.store.delta_retention_ms == 3 * 24 * 3600 * 1000
        with pytest.raises(NotFound):  # the real tables answer
            services.store.get_conversation("u1", "missing")


def test_the_s3_client_is_made_at_the_first_blob_request_not_when_the_services_are_built() -> None:
    asked: list[str] = []

    def client(service: str) -> Any:
        asked.append(service)
        return _client(service)

    with mock_aws():
        _client("s3").create_bucket(Bucket="stepline-artifacts")
        _client("ssm").put_parameter(Name=ENV["STEPLINE_OPENAI_KEY_PARAMETER"], Value="sk-test", Type="SecureString")
        services = build_services(Settings.from_env(ENV), client=client)
        assert "s3" not in asked and "dynamodb" in asked  # a cold start that touches no blob makes no S3 client
        ref = services.blobs.put("u1", b"payload", media_type="text/plain")
        assert asked.count("s3") == 1 and services.blobs.get(ref) == b"payload"
        services.blobs.get(ref)
        assert asked.count("s3") == 1  # made once, then kept


def test_the_eventbridge_client_is_made_at_the_first_publish_not_when_the_services_are_built() -> None:
    from stepline.runtime.notifications import RunEvent

    asked: list[str] = []

    def client(service: str) -> Any:
        asked.append(service)
        return _client(service)

    env = ENV | {"STEPLINE_OPENAI_KEY_PARAMETER": "", "STEPLINE_EVENT_BUS": "stepline-events-bus"}
    with mock_aws():
        _client("events").create_event_bus(Name="stepline-events-bus")
        services = build_services(Settings.from_env(env), client=client)
        assert isinstance(services.notifier, EventBridgeNotifier) and "events" not in asked
        event = RunEvent(detail_type="Run Completed", detail={"runId": "r1", "userId": "u1"})
        services.notifier.publish(event)
        services.notifier.publish(event)
        assert asked.count("events") == 1  # made once, at the first publish, then kept
    with pytest.raises(TypeError):
        EventBridgeNotifier(bus="stepline-events-bus")  # neither a client nor a way to make one


def test_an_unreadable_key_fails_without_showing_anything_secret() -> None:
    with mock_aws():
        with pytest.raises(ConfigurationError) as caught:
            build_services(Settings.from_env(ENV), client=_client)
        assert "/stepline/test/openai-api-key" in str(caught.value) and "ParameterNotFound" in str(caught.value)


@pytest.mark.parametrize("name", HANDLER_NAMES)
def test_each_function_entry_point_binds_its_worker(name: str) -> None:
    directory = name.removeprefix("stepline-").replace("-", "_")
    spec = importlib.util.spec_from_file_location(
        f"app_{directory}", REPO / "shared/stepline/stack/functions" / directory / "app.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # binding is lazy: no AWS call at import
    assert module.handler.__name__ == worker_handler(name, HANDLERS[name]).__name__
    assert module.handler.__name__ == name.removeprefix("stepline-").replace("-", "_")
    assert "app_" + directory not in sys.modules  # not left behind for other tests


def test_the_reconciler_entry_point_closes_a_run_from_an_eventbridge_event(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import dataclass

    from stepline.aws.dynamodb import DynamoStore
    from stepline.store.ports import TurnStart

    @dataclass
    class Context:
        function_name: str = "stepline-reconciler"
        memory_limit_in_mb: int = 256
        invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:stepline-reconciler"
        aws_request_id: str = "req-1"

    arn = "arn:aws:states:us-east-1:123456789012:stateMachine:stepline-agent-run"
    for key, value in {**ENV, "STEPLINE_STATE_MACHINE_ARN": arn}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")  # no X-Ray daemon here
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Stepline")  # template.yaml's Globals
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        create_tables(_client("dynamodb"), {"AgentTable": "stepline-agent", "EventsTable": "stepline-events"})
        _client("s3").create_bucket(Bucket="stepline-artifacts")
        store = DynamoStore(_client("dynamodb"), agent_table="stepline-agent", events_table="stepline-events")
        turn = TurnStart(
            conversation_id="c1",
            run_id="r1",
            assistant_message_id="a1",
            user_message={"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
            now=1_000,
        )
        store.start_turn("alice", turn)
        spec = importlib.util.spec_from_file_location(
            "app_reconciler", REPO / "shared/stepline/stack/functions" / "reconciler" / "app.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # no AWS call at import: no key, no model
        event = {
            "source": "aws.states",
            "detail-type": "Step Functions Execution Status Change",
            "detail": {"status": "ABORTED", "name": "r1", "input": '{"userId": "alice", "runId": "r1"}'},
        }
        assert module.handler(event, Context()) == {"runId": "r1", "outcome": "closed", "status": "aborted"}
        assert store.get_run("alice", "r1").status == "aborted"
        assert store.get_conversation("alice", "c1").active_run_id is None
        assert module.handler(event, Context())["outcome"] == "untouched"
        assert module.handler({**event, "detail": {**event["detail"], "status": "SUCCEEDED"}}, Context()) == {
            "ignored": "SUCCEEDED"
        }


def test_links_are_keyed_from_secrets_manager_and_events_go_to_the_bus() -> None:
    env = {**ENV, "STEPLINE_OPENAI_KEY_PARAMETER": "", "STEPLINE_EVENT_BUS": "stepline-events-bus"}
    with mock_aws():
        create_tables(_client("dynamodb"), {"AgentTable": "stepline-agent", "EventsTable": "stepline-events"})
        _client("s3").create_bucket(Bucket="stepline-artifacts")
        arn = _client("secretsmanager").create_secret(Name="stepline-link-key", SecretString="s" * 64)["ARN"]
        services = build_services(Settings.from_env({**env, "STEPLINE_APPROVAL_LINK_SECRET": arn}), client=_client)
        assert services.approval_links is not None and services.approval_links.key == b"s" * 64
        assert isinstance(services.notifier, EventBridgeNotifier)
        off = build_services(Settings.from_env(ENV | {"STEPLINE_OPENAI_KEY_PARAMETER": ""}), client=_client)
        assert off.approval_links is None and isinstance(off.notifier, NoNotifier)
        with pytest.raises(KeyUnavailableError) as caught:
            build_services(Settings.from_env({**env, "STEPLINE_APPROVAL_LINK_SECRET": "missing"}), client=_client)
    assert "missing" in str(caught.value) and "ResourceNotFoundException" in str(caught.value)


def test_stream_push_is_the_event_api_when_both_its_domains_are_set_else_the_poll() -> None:
    from stepline.aws.appsync_events import AppSyncEventsNotifier
    from stepline.runtime.stream_push import PUSH_WINDOW, CoalescingNotifier

    domains = {
        "STEPLINE_EVENTS_HTTP_DOMAIN": "abc.appsync-api.eu-west-1.amazonaws.com",
        "STEPLINE_EVENTS_REALTIME_DOMAIN": "abc.appsync-realtime-api.eu-west-1.amazonaws.com",
        "AWS_REGION": "eu-west-1",
    }
    env = ENV | {"STEPLINE_OPENAI_KEY_PARAMETER": ""}
    with mock_aws():
        coalesced = build_services(Settings.from_env(env | domains), client=_client).stream_push
        assert isinstance(coalesced, CoalescingNotifier) and coalesced.window == PUSH_WINDOW
        pushed = coalesced.inner
        assert isinstance(pushed, AppSyncEventsNotifier)
        assert pushed.api.publish_url == "https://abc.appsync-api.eu-west-1.amazonaws.com/event"
        assert pushed.api.realtime_url == "wss://abc.appsync-realtime-api.eu-west-1.amazonaws.com/event/realtime"
        assert pushed.api.region == "eu-west-1"
        for unset in ("STEPLINE_EVENTS_HTTP_DOMAIN", "STEPLINE_EVENTS_REALTIME_DOMAIN"):
            assert build_services(Settings.from_env(env | domains | {unset: ""}), client=_client).stream_push is None
        assert build_services(Settings.from_env(env), client=_client).stream_push is None
