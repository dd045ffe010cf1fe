"""The project's template is Stepline's, with the project as a layer and STEPLINE_AGENT set (either way
Stepline's template names the agent: its own parameter, or none yet)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepline.project.template import AGENT_LAYER, AGENT_PARAMETER, project_template

TEMPLATE = """\
Parameters:
  {parameter}
  ModelId: {{Type: String, Default: openai:gpt-5.1}}
Globals:
  Function:
    Environment:
      Variables:
        {variable}
        STEPLINE_MODEL: !Ref ModelId
Resources:
  SharedLayer:
    Type: AWS::Serverless::LayerVersion
    Properties: {{ContentUri: shared/, CompatibleRuntimes: [python3.13], CompatibleArchitectures: [arm64]}}
    Metadata: {{BuildMethod: python3.13, BuildArchitecture: arm64}}
  StepFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/model_step/
      Role: !GetAtt StepRole.Arn
      Layers: [!Ref SharedLayer, !Sub "arn:${{AWS::Partition}}:lambda:x"]
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties: {{DefinitionUri: infra/statemachine/agent_run.asl.json}}
"""


def stepline_root(tmp_path: Path, *, parameter: str, variable: str) -> Path:
    root = tmp_path / "stepline"
    root.mkdir()
    (root / "template.yaml").write_text(TEMPLATE.format(parameter=parameter, variable=variable))
    return root


@pytest.mark.parametrize(
    ("parameter", "variable", "named"),
    [
        ('AgentRef: {Type: String, Default: ""}', "STEPLINE_AGENT: !Ref AgentRef", "AgentRef"),
        ("Stage: {Type: String, Default: dev}", "STEPLINE_STAGE: !Ref Stage", AGENT_PARAMETER),
    ],
)
def test_the_agent_is_set_through_the_templates_parameter_or_one_added(
    tmp_path: Path, parameter: str, variable: str, named: str
) -> None:
    root = stepline_root(tmp_path, parameter=parameter, variable=variable)
    project = tmp_path / "work" / "my-agent"
    derived = project_template(root, project, agent="agent:agent", name="my-agent")
    assert derived["Globals"]["Function"]["Environment"]["Variables"]["STEPLINE_AGENT"] == {"Ref": named}
    assert derived["Parameters"][named]["Default"] == "agent:agent"
    assert (AGENT_PARAMETER in derived["Parameters"]) == (named == AGENT_PARAMETER)
    resources = derived["Resources"]
    function = resources["StepFunction"]["Properties"]
    assert function["Layers"][:2] == [{"Ref": "SharedLayer"}, {"Ref": AGENT_LAYER}]
    assert function["Role"] == {"Fn::GetAtt": ["StepRole", "Arn"]}  # short forms read as long forms
    assert function["CodeUri"] == "../../stepline/functions/model_step/"  # relative to the project
    assert resources["Machine"]["Properties"]["DefinitionUri"] == "../../stepline/infra/statemachine/agent_run.asl.json"
    assert resources["SharedLayer"]["Properties"]["ContentUri"] == "../../stepline/shared/"
    layer = resources[AGENT_LAYER]
    assert layer["Properties"]["ContentUri"] == "."
    assert layer["Metadata"] == {"BuildMethod": "python3.13", "BuildArchitecture": "arm64"}
