"""functions/api/app.py as Lambda runs it: Mangum with API Gateway REST proxy events, and the same
app under the Lambda Web Adapter (the authorizer's context arrives as the `x-amzn-request-context`
header), with services from the environment on moto."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient
from moto import mock_aws

from stepline.aws.wiring import services_from_env
from stepline.llm.registry import DEMO_BOOK
from stepline.local.resources import create_bucket, create_tables
from stepline.runtime.turn import begin_turn

REPO = Path(__file__).resolve().parents[3]
ENV = {
    "STEPLINE_AGENT_TABLE": "stepline-agent",
    "STEPLINE_EVENTS_TABLE": "stepline-events",
    "STEPLINE_BUCKET": "stepline-artifacts",
    "STEPLINE_MODEL": f"scripted:{DEMO_BOOK}",
}


@pytest.fixture
def api_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        create_tables(
            boto3.client("dynamodb", region_name="us-east-1"),
            {"AgentTable": "stepline-agent", "EventsTable": "stepline-events"},
        )
        create_bucket(boto3.client("s3", region_name="us-east-1"), "stepline-artifacts")
        services_from_env.cache_clear()
        loop = asyncio.new_event_loop()  # Mangum runs on the thread's loop, which Lambda keeps between calls
        asyncio.set_event_loop(loop)
        spec = importlib.util.spec_from_file_location("app_api", REPO / "functions" / "api" / "app.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
        services_from_env.cache_clear()
        asyncio.set_event_loop(None)
        loop.close()


def rest_event(method: str, path: str, *, sub: str | None, body: Any = None) -> dict[str, Any]:
    context: dict[str, Any] = {
        "resourcePath": "/api/{proxy+}",
        "httpMethod": method,
        "path": f"/prod{path}",
        "stage": "prod",
        "requestId": "req-1",
        "identity": {"sourceIp": "203.0.113.9"},
    }
    if sub is not None:
        context["authorizer"] = {"claims": {"sub": sub, "email": "a@example.com"}}
    return {
        "resource": "/api/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": {"content-type": "application/json", "host": "abc.execute-api.us-east-1.amazonaws.com"},
        "multiValueHeaders": {},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": {"proxy": path.removeprefix("/api/")},
        "stageVariables": None,
        "requestContext": context,
        "body": json.dumps(body) if body is not None else None,
        "isBase64Encoded": False,
    }


def test_mangum_serves_the_buffered_routes_as_the_authorizers_user(api_module: Any) -> None:
    handler = api_module.handler
    listed = handler(rest_event("GET", "/api/conversations", sub="user-a"), None)
    anonymous = handler(rest_event("GET", "/api/conversations", sub=None), None)
    unknown = handler(rest_event("POST", "/api/approvals/aitxt-x", sub="user-a", body={"approved": True}), None)
    assert listed["statusCode"] == 200 and json.loads(listed["body"]) == {"conversations": [], "nextCursor": None}
    assert anonymous["statusCode"] == 401
    assert unknown["statusCode"] == 404


def test_under_the_web_adapter_the_user_comes_from_the_request_context_header(api_module: Any) -> None:
    services = services_from_env()
    user_message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    begin_turn(
        services,
        "user-b",
        conversation_id="chat-1",
        run_id="run-1",
        assistant_message_id="m1",
        user_message=user_message,
    )

    def as_user(sub: str) -> dict[str, str]:
        return {"x-amzn-request-context": json.dumps({"authorizer": {"claims": {"sub": sub}}, "stage": "prod"})}

    with TestClient(api_module.app) as client:
        mine = client.get("/api/conversations/chat-1", headers=as_user("user-b"))
        theirs = client.get("/api/conversations/chat-1", headers=as_user("user-c"))
        nobody = client.get("/api/conversations/chat-1")
        forged = client.get("/api/conversations/chat-1", headers={"x-amzn-request-context": "{not json"})
    assert mine.status_code == 200 and mine.json()["messages"][0]["parts"] == user_message["parts"]
    assert mine.json()["activeRunId"] == "run-1"
    assert theirs.status_code == 404
    assert nobody.status_code == 401 and forged.status_code == 401
