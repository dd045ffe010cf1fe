"""The model step's versions, alias and SnapStart as deployed (the SAM-translated template).

The state machine must invoke the alias (SnapStart applies to published versions only), the alias
must move whenever the code in the shared layer changes (SAM publishes only on CodeUri changes
unless told otherwise, and the model step's CodeUri is a two-line app.py), and a replaced version
must be deleted (a retained one keeps its snapshot, billed).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from samtranslator.translator.transform import transform

from tests.support.project_template import StubPolicyLoader
from tests.unit.infra.test_template import FUNCTIONS, Template

ALIAS = "ModelStepFunctionAliaslive"


def _versions(translated: Template, function: str) -> dict[str, dict[str, Any]]:
    return {
        name: r
        for name, r in translated["Resources"].items()
        if r["Type"] == "AWS::Lambda::Version" and r["Properties"]["FunctionName"] == {"Ref": function}
    }


def _translate(source: Template, layer_key: str) -> Template:
    packaged = copy.deepcopy(source)
    for logical_id, resource in packaged["Resources"].items():
        properties = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(properties.get(key), str):
                name = layer_key if logical_id == "SharedLayer" else logical_id
                properties[key] = f"s3://stepline-artifacts/{name}.zip"
        if isinstance(properties.get("DefinitionUri"), str):
            properties["DefinitionUri"] = {"Bucket": "stepline-artifacts", "Key": "agent_run.asl.json"}
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        return transform(packaged, {}, StubPolicyLoader())


def test_snapstart_is_a_parameter_off_by_default_and_only_on_the_model_step(
    source: Template, translated: Template
) -> None:
    parameter = source["Parameters"]["SnapStart"]
    assert parameter["Default"] == "none" and parameter["AllowedValues"] == ["none", "model-step"]
    assert translated["Conditions"]["SnapStartModelStep"] == {"Fn::Equals": [{"Ref": "SnapStart"}, "model-step"]}
    properties = translated["Resources"]["ModelStepFunction"]["Properties"]
    assert properties["SnapStart"] == {
        "Fn::If": ["SnapStartModelStep", {"ApplyOn": "PublishedVersions"}, {"Ref": "AWS::NoValue"}]
    }
    # The function primes its imports before the snapshot only when it has one (stepline.aws.snapstart).
    assert properties["Environment"]["Variables"]["STEPLINE_SNAPSTART"] == {"Fn::If": ["SnapStartModelStep", "1", ""]}
    assert properties["Runtime"] == "python3.13"  # SnapStart for Python needs 3.12 or later
    assert "EphemeralStorage" not in properties and "FileSystemConfigs" not in properties  # unsupported with it
    for name in set(FUNCTIONS) - {"ModelStepFunction"}:
        other = translated["Resources"][name]["Properties"]
        assert "SnapStart" not in other and not _versions(translated, name), name


def test_the_state_machine_invokes_the_alias_of_the_latest_version(translated: Template) -> None:
    resources = translated["Resources"]
    substitutions = resources["AgentRunStateMachine"]["Properties"]["DefinitionSubstitutions"]
    assert substitutions["ModelStepFunctionArn"] == {"Ref": ALIAS}  # Ref of an alias is its ARN
    alias = resources[ALIAS]
    assert alias["Type"] == "AWS::Lambda::Alias" and alias["Properties"]["Name"] == "live"
    [(version_id, version)] = _versions(translated, "ModelStepFunction").items()
    assert alias["Properties"]["FunctionVersion"] == {"Fn::GetAtt": [version_id, "Version"]}
    assert version["DeletionPolicy"] == "Delete", "a replaced version (and its snapshot) is not kept"
    # lambda:InvokeFunction on function:NAME* covers the qualified ARN function:NAME:live.
    role = resources["AgentRunStateMachineRole"]["Properties"]["Policies"]
    grants = [
        s["Resource"]
        for p in role
        for s in p["PolicyDocument"]["Statement"]
        if s["Action"] == ["lambda:InvokeFunction"] and "ModelStepFunction" in str(s["Resource"])
    ]
    assert grants == [
        {
            "Fn::Sub": [
                "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:${functionName}*",
                {"functionName": {"Ref": "ModelStepFunction"}},
            ]
        }
    ]


def test_a_change_of_the_shared_layer_publishes_a_new_version(source: Template) -> None:
    first = set(_versions(_translate(source, "layer-a"), "ModelStepFunction"))
    again = set(_versions(_translate(source, "layer-a"), "ModelStepFunction"))
    changed = set(_versions(_translate(source, "layer-b"), "ModelStepFunction"))
    assert first == again, "the same code, the same version"
    assert first != changed, "new stepline code in the layer reaches the alias"
