"""The UI deployer (functions/ui_deploy/app.py): CloudFormation's custom resource, on moto S3.

CloudFormation's answer goes to a local HTTP server standing for the presigned ResponseURL.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from moto import mock_aws

REPO = Path(__file__).resolve().parents[3]
CONFIG = {"apiBase": "", "auth": {"authority": "https://cognito-idp.us-east-1.amazonaws.com/pool", "clientId": "c1"}}


def _deployer(root: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("STEPLINE_WEB_ROOT", str(root))
    spec = importlib.util.spec_from_file_location(
        "ui_deploy_app", REPO / "shared/stepline/stack/functions/ui_deploy/app.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def answers() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/answer", received
    server.shutdown()
    server.server_close()


def _event(kind: str, url: str) -> dict[str, Any]:
    return {
        "RequestType": kind,
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/s/1",
        "RequestId": "r1",
        "LogicalResourceId": "UiContent",
        "ResourceProperties": {"Bucket": "ui-bucket", "Build": "layer:1", "Config": CONFIG},
    }


def test_the_build_and_its_config_are_published_then_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: tuple[str, list[dict[str, Any]]]
) -> None:
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text("<!doctype html><div id=root></div>")
    (tmp_path / "assets/index-abc.js").write_text("console.log(1)")
    (tmp_path / "assets/index-abc.js.map").write_text("{}")
    app = _deployer(tmp_path, monkeypatch)
    url, received = answers
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="ui-bucket")
        app.handler(_event("Create", url), None, s3=s3)
        keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="ui-bucket")["Contents"])
        index = s3.get_object(Bucket="ui-bucket", Key="index.html")
        script = s3.get_object(Bucket="ui-bucket", Key="assets/index-abc.js")
        config = json.loads(s3.get_object(Bucket="ui-bucket", Key="config.json")["Body"].read())
        app.handler(_event("Delete", url), None, s3=s3)
        left = s3.list_objects_v2(Bucket="ui-bucket").get("Contents", [])
    assert keys == ["assets/index-abc.js", "config.json", "index.html"]  # no source maps published
    assert (index["ContentType"], index["CacheControl"]) == ("text/html", "no-cache")
    assert script["CacheControl"] == "public, max-age=31536000, immutable"
    assert config == CONFIG and left == []
    assert [(a["Status"], a["LogicalResourceId"], a["RequestId"]) for a in received] == [
        ("SUCCESS", "UiContent", "r1"),
        ("SUCCESS", "UiContent", "r1"),
    ]
    assert received[0]["PhysicalResourceId"] == received[1]["PhysicalResourceId"]


def test_a_failure_is_answered_so_the_stack_does_not_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: tuple[str, list[dict[str, Any]]]
) -> None:
    (tmp_path / "index.html").write_text("x")
    app = _deployer(tmp_path, monkeypatch)
    url, received = answers
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")  # no bucket: the upload fails
        with pytest.raises(Exception, match="NoSuchBucket"):
            app.handler(_event("Update", url), None, s3=s3)
    assert [a["Status"] for a in received] == ["FAILED"]
    assert "NoSuchBucket" in received[0]["Reason"] or "ClientError" in received[0]["Reason"]
