"""Stream push as deployed: the Event API, its `runs` namespace, who may publish and who may subscribe.

Read from the SAM-translated template (the `translated` fixture, conftest.py). The channel
namespace must be the one the adapter publishes to, the auth must be IAM everywhere (no API key
exists to leak), and the grants must split: the workers that append to a run's log publish only,
the stream function connects and subscribes only, nobody else touches the API.
"""

from __future__ import annotations

from typing import Any

from stepline.aws.appsync_events import NAMESPACE, channel_of
from tests.unit.infra.test_template import FUNCTIONS, Template, _as_list, _named, _statements

PUBLISHERS = {"ModelStepFunction", "ModelStepUnwatchedFunction", "FinalizeRunFunction", "FailRunFunction"}
"""The workers that append to a run's log and notify (steps, and the run's end)."""
SUBSCRIBERS = {"StreamFunction"}
DOMAINS = {
    "STEPLINE_EVENTS_HTTP_DOMAIN": "Dns.Http",
    "STEPLINE_EVENTS_REALTIME_DOMAIN": "Dns.Realtime",
}


def _appsync_grants(translated: Template, name: str) -> list[dict[str, Any]]:
    policies = translated["Resources"][f"{name}Role"]["Properties"]["Policies"]
    grants: list[dict[str, Any]] = []
    for policy in policies:
        statements = _statements({"Policies": [policy]})
        appsync = [s for s in statements if any(a.startswith("appsync:") for a in _as_list(s["Action"]))]
        if appsync:
            assert "Fn::If" in policy and policy["Fn::If"][0] == "HasStreamPush", name  # only with push on
            grants += appsync
    return grants


def test_the_event_api_is_iam_only_with_the_runs_namespace(source: Template, translated: Template) -> None:
    api = translated["Resources"]["RunEventsApi"]
    assert api["Type"] == "AWS::AppSync::Api" and api["Condition"] == "HasStreamPush"
    config = api["Properties"]["EventConfig"]
    assert config["AuthProviders"] == [{"AuthType": "AWS_IAM"}]
    for modes in ("ConnectionAuthModes", "DefaultPublishAuthModes", "DefaultSubscribeAuthModes"):
        assert config[modes] == [{"AuthType": "AWS_IAM"}], modes
    assert not any(r["Type"] == "AWS::AppSync::ApiKey" for r in translated["Resources"].values())
    namespace = translated["Resources"]["RunsChannelNamespace"]
    assert namespace["Type"] == "AWS::AppSync::ChannelNamespace" and namespace["Condition"] == "HasStreamPush"
    assert namespace["Properties"]["ApiId"] == {"Fn::GetAtt": ["RunEventsApi", "ApiId"]}
    assert namespace["Properties"]["Name"] == NAMESPACE
    assert channel_of("u", "r").split("/")[1] == NAMESPACE  # the adapter publishes into that namespace
    parameter = source["Parameters"]["StreamPush"]
    assert parameter["Default"] == "appsync-events" and set(parameter["AllowedValues"]) == {"appsync-events", "poll"}
    assert translated["Conditions"]["HasStreamPush"] == {"Fn::Equals": [{"Ref": "StreamPush"}, "appsync-events"]}


def test_publishers_publish_and_the_stream_connects_and_subscribes_nothing_more(translated: Template) -> None:
    namespace_arn = {"Fn::GetAtt": ["RunsChannelNamespace", "ChannelNamespaceArn"]}
    for name in FUNCTIONS:
        grants = {(a, str(s["Resource"])) for s in _appsync_grants(translated, name) for a in _as_list(s["Action"])}
        if name in PUBLISHERS:
            assert grants == {("appsync:EventPublish", str(namespace_arn))}, name
        elif name in SUBSCRIBERS:
            api_arn = {"Fn::GetAtt": ["RunEventsApi", "ApiArn"]}
            assert grants == {("appsync:EventConnect", str(api_arn)), ("appsync:EventSubscribe", str(namespace_arn))}
        else:
            assert not grants, name


def test_the_domains_reach_exactly_the_publishers_and_the_stream_and_empty_without_push(translated: Template) -> None:
    for name in FUNCTIONS:
        variables = translated["Resources"][name]["Properties"]["Environment"]["Variables"]
        for variable, attribute in DOMAINS.items():
            if name in PUBLISHERS | SUBSCRIBERS:
                value = variables[variable]
                # Fn::If: the API's domain with push on, "" with it off (the functions then poll).
                assert value == {"Fn::If": ["HasStreamPush", {"Fn::GetAtt": ["RunEventsApi", attribute]}, ""]}
                assert _named(value["Fn::If"][1]) == {"RunEventsApi"}
            else:
                assert variable not in variables, (name, variable)
