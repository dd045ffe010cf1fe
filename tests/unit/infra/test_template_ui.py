"""Sign-in, the web UI on the API's origin, alarms and the dashboard, as deployed (the translated template)."""

from __future__ import annotations

import json
import re
from typing import Any

from stepline.runtime.handling import HANDLER_NAMES, logical_name
from tests.unit.infra.test_template import FUNCTIONS, Template, _as_list, _named, _statements, _sub_text

IDENTITY = {"UserPool", "UserPoolClient", "UserPoolDomain", "UserPoolLoginBranding"}
CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
ALL_VIEWER_EXCEPT_HOST = "b689b0a8-53d0-40ab-baf2-68738e2966ac"


def _config(translated: Template) -> dict[str, Any]:
    return translated["Resources"]["UiDistribution"]["Properties"]["DistributionConfig"]


def test_the_pool_its_client_and_domain_exist_only_when_asked_for(source: Template, translated: Template) -> None:
    assert source["Conditions"]["CreateUserPool"] == {"Fn::Equals": [{"Ref": "UserPoolArn"}, ""]}
    for name in IDENTITY:
        assert translated["Resources"][name]["Condition"] == "CreateUserPool", name
    assert not any(
        r["Type"].startswith("AWS::Cognito::") for n, r in translated["Resources"].items() if n not in IDENTITY
    )
    client = translated["Resources"]["UserPoolClient"]["Properties"]
    # A browser's client: no secret, the authorization code flow (Cognito pairs it with PKCE).
    assert client["GenerateSecret"] is False and client["AllowedOAuthFlows"] == ["code"]
    assert "openid" in client["AllowedOAuthScopes"]
    ui = "https://${UiDistribution.DomainName}/"
    assert [_sub_text(u) for u in client["CallbackURLs"]] == [ui] == [_sub_text(u) for u in client["LogoutURLs"]]
    assert translated["Resources"]["UserPoolDomain"]["Properties"]["ManagedLoginVersion"] == 2
    authorizer = source["Resources"]["ChatApi"]["Properties"]["Auth"]["Authorizers"]["CognitoAuthorizer"]
    assert authorizer["UserPoolArn"] == {
        "Fn::If": ["CreateUserPool", {"Fn::GetAtt": ["UserPool", "Arn"]}, {"Ref": "UserPoolArn"}]
    }
    outputs = translated["Outputs"]
    assert {"UiUrl", "SignInUrl", "UserPoolId"} <= outputs.keys()
    assert outputs["UserPoolId"]["Condition"] == "CreateUserPool"


def test_the_ui_and_the_api_share_one_origin(translated: Template) -> None:
    config = _config(translated)
    origins = {o["Id"]: o for o in config["Origins"]}
    assert set(origins) == {"ui", "api"}
    assert origins["ui"]["OriginAccessControlId"] == {"Fn::GetAtt": ["UiOriginAccessControl", "Id"]}
    assert origins["ui"]["DomainName"] == {"Fn::GetAtt": ["UiBucket", "RegionalDomainName"]}
    assert _sub_text(origins["api"]["DomainName"]).startswith("${ChatApi}.execute-api.")
    assert _sub_text(origins["api"]["OriginPath"]) == "/${Stage}"  # the UI's /api/... is the stage's /api/...
    default = config["DefaultCacheBehavior"]
    assert default["TargetOriginId"] == "ui"
    (rewrite,) = default["FunctionAssociations"]
    assert rewrite["FunctionARN"]["Fn::GetAtt"][0] == "UiRewriteFunction"
    behaviors = {b["PathPattern"]: b for b in config["CacheBehaviors"]}
    api = behaviors["/api/*"]
    assert api["TargetOriginId"] == "api" and set(api["AllowedMethods"]) >= {"GET", "POST", "DELETE", "OPTIONS"}
    # Never cached; the Authorization and Last-Event-ID headers and the query reach the API.
    assert (api["CachePolicyId"], api["OriginRequestPolicyId"]) == (CACHING_DISABLED, ALL_VIEWER_EXCEPT_HOST)
    assert "FunctionAssociations" not in api  # an API 404 stays the API's JSON, never the page
    assert "CustomErrorResponses" not in config  # (those would apply to the API too)
    assert behaviors["/config.json"]["TargetOriginId"] == "ui"
    assert behaviors["/config.json"]["CachePolicyId"] == CACHING_DISABLED  # read at every start


def test_only_the_distribution_reads_the_ui_bucket(translated: Template) -> None:
    bucket = translated["Resources"]["UiBucket"]["Properties"]
    assert set(bucket["PublicAccessBlockConfiguration"].values()) == {True}
    (statement,) = translated["Resources"]["UiBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "cloudfront.amazonaws.com"}
    assert statement["Action"] == "s3:GetObject"
    source_arn = statement["Condition"]["StringEquals"]["AWS:SourceArn"]
    assert _sub_text(source_arn).endswith(":distribution/${UiDistribution}")


def test_the_runtime_configuration_names_the_pool_and_client_in_use(translated: Template) -> None:
    content = translated["Resources"]["UiContent"]["Properties"]
    assert content["ServiceToken"] == {"Fn::GetAtt": ["UiDeployFunction", "Arn"]}
    assert content["Build"]["Ref"].startswith("WebUiLayer")  # a new build is a new version: an update
    config = content["Config"]
    assert config["apiBase"] == ""  # same origin
    auth = config["auth"]
    assert auth["clientId"]["Fn::If"][:2] == ["CreateUserPool", {"Ref": "UserPoolClient"}]
    assert "/${UserPool}" in _sub_text(auth["authority"]["Fn::If"][1])
    layer = translated["Resources"][content["Build"]["Ref"]]["Properties"]
    assert layer["Content"]["S3Key"].startswith("WebUiLayer")  # packaged from web/dist


def test_the_ui_deployer_may_only_write_the_ui_bucket(translated: Template) -> None:
    statements = _statements(translated["Resources"]["UiDeployFunctionRole"]["Properties"])
    actions = {a: _named(s["Resource"]) for s in statements for a in _as_list(s["Action"])}
    assert actions == {"s3:PutObject": {"UiBucket"}, "s3:DeleteObject": {"UiBucket"}, "s3:ListBucket": {"UiBucket"}}
    layers = translated["Resources"]["UiDeployFunction"]["Properties"]["Layers"]
    assert [layer["Ref"].startswith("WebUiLayer") for layer in layers] == [True]  # stand-alone: the UI only


def _alarms(translated: Template) -> dict[str, dict[str, Any]]:
    return {n: r["Properties"] for n, r in translated["Resources"].items() if r["Type"] == "AWS::CloudWatch::Alarm"}


def test_alarms_watch_executions_every_function_and_both_tables(translated: Template) -> None:
    alarms = _alarms(translated)
    assert set(alarms) == {
        "ExecutionsFailedAlarm",
        "ExecutionsTimedOutAlarm",
        "LambdaErrorsAlarm",
        "LambdaThrottlesAlarm",
        "DynamoDBThrottlesAlarm",
    }
    for name, alarm in alarms.items():
        assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}], name
        assert alarm["TreatMissingData"] == "notBreaching", name
    for name in ("ExecutionsFailedAlarm", "ExecutionsTimedOutAlarm"):
        assert alarms[name]["Dimensions"] == [{"Name": "StateMachineArn", "Value": {"Ref": "AgentRunStateMachine"}}]
    for name, metric in (("LambdaErrorsAlarm", "Errors"), ("LambdaThrottlesAlarm", "Throttles")):
        stats = [m["MetricStat"]["Metric"] for m in alarms[name]["Metrics"] if "MetricStat" in m]
        assert {s["MetricName"] for s in stats} == {metric}
        assert {s["Dimensions"][0]["Value"]["Ref"] for s in stats} == set(FUNCTIONS)  # every runtime function
        (total,) = [m for m in alarms[name]["Metrics"] if m.get("ReturnData")]
        assert set(re.findall(r"[a-z]+", total["Expression"].removeprefix("SUM"))) == {
            m["Id"] for m in alarms[name]["Metrics"] if "MetricStat" in m
        }
    stats = [m["MetricStat"]["Metric"] for m in alarms["DynamoDBThrottlesAlarm"]["Metrics"] if "MetricStat" in m]
    assert {(s["MetricName"], s["Dimensions"][0]["Value"]["Ref"]) for s in stats} == {
        (kind, table)
        for kind in ("ReadThrottleEvents", "WriteThrottleEvents")
        for table in ("AgentTable", "EventsTable")
    }


def test_the_dashboard_reads_metrics_the_functions_emit(translated: Template) -> None:
    body_template, variables = translated["Resources"]["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    assert variables == {
        "ModelStep": {"Ref": "ModelStepFunction"},
        "ModelStepUnwatched": {"Ref": "ModelStepUnwatchedFunction"},
    }
    body = json.loads(re.sub(r"\$\{[^}]+\}", "x", body_template))
    metrics = [m for w in body["widgets"] if w["type"] == "metric" for m in w["properties"]["metrics"]]
    stepline = {
        (m[1], dict(zip(m[2:-1:2], m[3:-1:2], strict=True)).get("service")) for m in metrics if m[0] == "Stepline"
    }
    emitted = {(logical_name(name), name) for name in HANDLER_NAMES}
    # Outcome counts come from stepline.aws.observability (metric = the handler's logical name,
    # dimension service = its function name); TimeToFirstToken from the model step.
    assert stepline - {("TimeToFirstToken", "stepline-model-step")} <= emitted
    assert ("TimeToFirstToken", "stepline-model-step") in stepline
    titles = {w["properties"]["title"] for w in body["widgets"]}
    assert {"Runs", "Step latency (model step duration, ms)", "Time to first token (ms)", "Alarms"} == titles
