"""Tracing in the template: OpenTelemetry to X-Ray's OTLP endpoint (or elsewhere, or off), no X-Ray SDK anywhere."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.unit.infra.test_template import DEPLOY_FUNCTIONS, FUNCTIONS, Template, _resources

TRACED = FUNCTIONS
"""The functions that export spans of a run: every runtime function, the unattended ones included."""

ROOT = Path(__file__).resolve().parents[3]
XRAY_POLICY = {
    "Fn::If": [
        "TracesToXRay",
        {"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AWSXrayWriteOnlyAccess"},
        {"Ref": "AWS::NoValue"},
    ]
}


def test_the_tracing_parameters(source: Template) -> None:
    parameters = source["Parameters"]
    assert parameters["Tracing"]["AllowedValues"] == ["xray", "otlp", "off"]
    assert parameters["Tracing"]["Default"] == "xray"
    assert parameters["TraceContent"]["Default"] == "false"  # content capture is opt-in
    assert parameters["InspectRequests"]["AllowedValues"] == ["true", "false"]
    pattern = re.compile(parameters["OtlpEndpoint"]["AllowedPattern"])
    assert pattern.match("https://otlp.example.com:4318") and pattern.match("")
    assert not pattern.match("https://example.com/v1 ; rm -rf")
    assert source["Conditions"]["TracesToXRay"] == {"Fn::Equals": [{"Ref": "Tracing"}, "xray"]}


def test_every_runtime_function_gets_the_tracing_settings_and_nothing_of_lambda_s_own_xray(
    translated: Template,
) -> None:
    functions = _resources(translated, "AWS::Lambda::Function")
    for name in TRACED:
        properties = functions[name]["Properties"]
        variables = properties["Environment"]["Variables"]
        assert variables["STEPLINE_TRACING"] == {"Ref": "Tracing"}
        assert variables["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] == {"Ref": "TraceContent"}
        assert variables["OTEL_EXPORTER_OTLP_ENDPOINT"] == {"Fn::If": ["TracesToOtlp", {"Ref": "OtlpEndpoint"}, ""]}
        assert variables["STEPLINE_INSPECT"] == {"Ref": "InspectRequests"}
        assert "TracingConfig" not in properties
    assert "TracingConfiguration" not in translated["Resources"]["AgentRunStateMachine"]["Properties"]
    stage = next(iter(_resources(translated, "AWS::ApiGateway::Stage").values()))
    assert not stage["Properties"].get("TracingEnabled")


def test_the_xray_write_policy_only_when_traces_go_to_xray(translated: Template) -> None:
    roles = _resources(translated, "AWS::IAM::Role")
    for name in TRACED:
        managed: list[Any] = roles[f"{name}Role"]["Properties"].get("ManagedPolicyArns", [])
        assert XRAY_POLICY in managed, name
        assert not [a for a in managed if isinstance(a, str) and "AWSXray" in a], name  # never unconditional
    for name in DEPLOY_FUNCTIONS:
        assert XRAY_POLICY not in roles[f"{name}Role"]["Properties"].get("ManagedPolicyArns", [])


def test_no_function_ships_or_imports_the_xray_sdk(source: Template) -> None:
    for requirements in (
        ROOT / "shared/requirements.txt",
        ROOT / "shared/stepline/stack/functions/api/requirements.txt",
    ):
        pins = requirements.read_text().lower()
        assert "aws-xray-sdk" not in pins and "[tracer]" not in pins, requirements
    assert "aws-lambda-powertools==" in (ROOT / "shared/requirements.txt").read_text()
    for resource in source["Resources"].values():
        for layer in resource.get("Properties", {}).get("Layers", []):
            assert "Powertools" not in str(layer)  # its public layer bundles the X-Ray SDK
    for path in [*ROOT.glob("shared/stepline/**/*.py")]:
        text = path.read_text()
        assert "aws_xray_sdk" not in text.replace("`aws_xray_sdk`", ""), path
        assert not re.search(r"from aws_lambda_powertools import[^\n]*\bTracer\b", text), path
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert "powertools[tracer]" not in pyproject and "[tracer]" not in (ROOT / ".ci/install").read_text()
