"""The project's template is Stepline's, with the project as a layer and STEPLINE_AGENT set (either way
Stepline's template names the agent: its own parameter, or none yet)."""

from __future__ import annotations

import pytest

from stepline.project.template import AGENT_LAYER, AGENT_PARAMETER, project_path, project_template

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
      CodeUri: shared/stepline/stack/functions/model_step/
      Role: !GetAtt StepRole.Arn
      Layers: [!Ref SharedLayer, !Sub "arn:${{AWS::Partition}}:lambda:x"]
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties: {{DefinitionUri: shared/stepline/stack/statemachine/agent_run.asl.json}}
"""


@pytest.mark.parametrize(
    ("parameter", "variable", "named"),
    [
        ('AgentRef: {Type: String, Default: ""}', "STEPLINE_AGENT: !Ref AgentRef", "AgentRef"),
        ("Stage: {Type: String, Default: dev}", "STEPLINE_STAGE: !Ref Stage", AGENT_PARAMETER),
    ],
)
def test_the_agent_is_set_through_the_templates_parameter_or_one_added(
    parameter: str, variable: str, named: str
) -> None:
    text = TEMPLATE.format(parameter=parameter, variable=variable)
    derived = project_template(agent="agent:agent", name="my-agent", template=text)
    assert derived["Globals"]["Function"]["Environment"]["Variables"]["STEPLINE_AGENT"] == {"Ref": named}
    assert derived["Parameters"][named]["Default"] == "agent:agent"
    assert (AGENT_PARAMETER in derived["Parameters"]) == (named == AGENT_PARAMETER)
    resources = derived["Resources"]
    function = resources["StepFunction"]["Properties"]
    assert function["Layers"][:2] == [{"Ref": "SharedLayer"}, {"Ref": AGENT_LAYER}]
    assert function["Role"] == {"Fn::GetAtt": ["StepRole", "Arn"]}  # short forms read as long forms
    assert function["CodeUri"] == "stack/functions/model_step/"  # the project's copy of the stack
    assert resources["Machine"]["Properties"]["DefinitionUri"] == "stack/statemachine/agent_run.asl.json"
    assert resources["SharedLayer"]["Properties"]["ContentUri"] == "stack/layer/"
    layer = resources[AGENT_LAYER]
    assert layer["Properties"]["ContentUri"] == "src/"  # never the project folder: its .stepline/ stays local
    assert layer["Metadata"] == {"BuildMethod": "python3.13", "BuildArchitecture": "arm64"}


def test_a_local_path_the_project_has_no_copy_of_is_refused() -> None:
    """A new folder in Stepline's template must get a place in projects, not a path that does not exist there."""
    assert project_path("web/dist/") == "stack/web/"
    with pytest.raises(ValueError, match="infra/other/"):
        project_path("infra/other/")
