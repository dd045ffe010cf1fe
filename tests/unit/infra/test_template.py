"""template.yaml validates offline: cfn-lint is clean, and the SAM translator turns it into the stack we mean.

No AWS account is involved. The SAM transform runs in-process (`samtranslator.translator.transform.transform`)
with a stub managed-policy loader, after local paths (CodeUri, ContentUri, DefinitionUri) are replaced
by S3 locations as `sam package` would. The assertions read the translated CloudFormation, so they check
what would be deployed: the streaming integration, the IAM statements, the state machine's substitutions.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import intrinsics_multi_constructor

from stepline.aws.unattended_wiring import UnattendedSettings
from stepline.aws.wiring import Settings
from tests.support.project_template import StubPolicyLoader

REPO = Path(__file__).resolve().parents[3]
TEMPLATE = REPO / "template.yaml"
ASL = REPO / "shared/stepline/stack/statemachine/agent_run.asl.json"
SAMCONFIG = REPO / "infra" / "samconfig.toml"

Template = dict[str, Any]
STATE_MACHINE_NAME = "${AWS::StackName}-agent-run"

WORKERS = {
    # logical id: (CodeUri, Timeout, MemorySize)
    "ModelStepFunction": ("shared/stepline/stack/functions/model_step/", 900, 512),  # a step includes its tools
    # The same step for a run nobody follows: less memory, less CPU (the Route picks it).
    "ModelStepUnwatchedFunction": ("shared/stepline/stack/functions/model_step/", 900, 256),
    "AwaitInputFunction": ("shared/stepline/stack/functions/await_input/", 30, 256),
    "ExpireInputFunction": ("shared/stepline/stack/functions/expire_input/", 30, 256),
    "FinalizeRunFunction": ("shared/stepline/stack/functions/finalize_run/", 30, 256),
    "FailRunFunction": ("shared/stepline/stack/functions/fail_run/", 30, 256),
}
API_FUNCTIONS = {
    "ApiFunction": ("shared/stepline/stack/functions/api/", 29, 512),  # buffered: API Gateway stops waiting after 29 s
    "StreamFunction": ("shared/stepline/stack/functions/api/", 900, 512),  # a stream lasts up to 15 minutes
}
RECONCILER = {
    "ReconcilerFunction": ("shared/stepline/stack/functions/reconciler/", 120, 256)
}  # closes runs whose execution died
UNATTENDED = {
    "ScheduleDispatchFunction": (
        "shared/stepline/stack/functions/schedule_dispatch/",
        60,
        256,
    ),  # starts the due occurrences' runs
    "CallbackSenderFunction": (
        "shared/stepline/stack/functions/callback_sender/",
        30,
        256,
    ),  # one attempt per queued event
}
FUNCTIONS = WORKERS | API_FUNCTIONS | RECONCILER | UNATTENDED
MODEL_STEPS = ("ModelStepFunction", "ModelStepUnwatchedFunction")
# Deploy-time plumbing, not part of Stepline's runtime: no shared layer, no Stepline environment.
DEPLOY_FUNCTIONS = {"UiDeployFunction": ("shared/stepline/stack/functions/ui_deploy/", 300, 256)}

PLACEHOLDERS = {
    "ModelStepFunctionArn",
    "ModelStepUnwatchedFunctionArn",
    "AwaitInputFunctionArn",
    "ExpireInputFunctionArn",
    "FinalizeRunFunctionArn",
    "FailRunFunctionArn",
}

WEB_ADAPTER_LAYER = "arn:${AWS::Partition}:lambda:${AWS::Region}:753240598075:layer:LambdaAdapterLayerArm64:27"
STREAM_ROUTES = {
    ("/api/chat", "post"),
    ("/api/chat/{id}/stream", "get"),
    ("/api/completion", "post"),
    ("/api/object", "post"),
}

# The only grants allowed on Resource "*". Each is an AWS requirement, not a convenience.
MANAGED_POLICY_EXCEPTIONS = {
    # CreateLogGroup/CreateLogStream/PutLogEvents for the function's own log group (AWS-managed; SAM adds it).
    "service-role/AWSLambdaBasicExecutionRole": "the function's log group, named by Lambda",
    # X-Ray's write actions take no resource ARN (the OTLP export with Tracing xray).
    "AWSXrayWriteOnlyAccess": "X-Ray actions have no resource-level permissions",
}
INLINE_WILDCARD_EXCEPTIONS = {
    # Vended-log delivery for the state machine's Logging: the CloudWatch Logs delivery APIs take no
    # resource ARN (Step Functions developer guide, "IAM policies for logging to CloudWatch Logs").
    "AgentRunStateMachineRole": frozenset(
        {
            "logs:CreateLogDelivery",
            "logs:GetLogDelivery",
            "logs:UpdateLogDelivery",
            "logs:DeleteLogDelivery",
            "logs:ListLogDeliveries",
            "logs:PutResourcePolicy",
            "logs:DescribeResourcePolicies",
            "logs:DescribeLogGroups",
        }
    ),
}


class _SamLoader(yaml.SafeLoader):
    """The SAM translator's own reading of short-form tags (`!GetAtt A.B` → `["A", "B"]`), on a private loader."""


_SamLoader.add_multi_constructor("!", intrinsics_multi_constructor)


# -- fixtures --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def source() -> Template:
    """template.yaml as written (long-form intrinsics)."""
    return yaml.load(TEMPLATE.read_text(), Loader=_SamLoader)


@pytest.fixture(scope="module")
def translated(source: Template) -> Iterator[Template]:
    """The CloudFormation the SAM transform makes of template.yaml."""
    packaged = copy.deepcopy(source)
    for logical_id, resource in packaged["Resources"].items():
        properties = resource.get("Properties", {})
        # What `sam package` does: local folders and files become S3 locations.
        for key in ("CodeUri", "ContentUri"):
            if isinstance(properties.get(key), str):
                properties[key] = f"s3://stepline-artifacts/{logical_id}.zip"
        if isinstance(properties.get("DefinitionUri"), str):
            properties["DefinitionUri"] = {"Bucket": "stepline-artifacts", "Key": "agent_run.asl.json"}
    with pytest.MonkeyPatch.context() as monkeypatch:
        # The translator derives the partition of managed-policy ARNs from the boto3 region.
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        yield transform(packaged, {}, StubPolicyLoader())


def _resources(template: Template, kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == kind}


# -- (a) cfn-lint ----------------------------------------------------------------------------------


def test_cfn_lint_is_clean() -> None:
    # Run from the repository root so relative paths in the template resolve as `sam build` sees them.
    # cfnlint has no `__main__`, so call its console-script entry point.
    result = subprocess.run(
        [sys.executable, "-c", "from cfnlint.runner import main; main()", "template.yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


# -- (b) the SAM transform -------------------------------------------------------------------------


def test_state_machine_is_standard_with_exactly_its_substitutions(translated: Template) -> None:
    machine = translated["Resources"]["AgentRunStateMachine"]
    assert machine["Type"] == "AWS::StepFunctions::StateMachine"
    properties = machine["Properties"]
    assert properties["StateMachineType"] == "STANDARD"  # Express cannot wait for task tokens
    assert set(properties["DefinitionSubstitutions"]) == PLACEHOLDERS
    for name in WORKERS:
        # The model step through its alias (versions, SnapStart: test_template_snapstart.py).
        expected = (
            {"Ref": "ModelStepFunctionAliaslive"} if name == "ModelStepFunction" else {"Fn::GetAtt": [name, "Arn"]}
        )
        assert properties["DefinitionSubstitutions"][f"{name}Arn"] == expected
    assert "TracingConfiguration" not in properties  # the run's own trace (OpenTelemetry) replaces it
    assert properties["StateMachineName"] == {"Fn::Sub": STATE_MACHINE_NAME}
    # ContinueAsNew starts the run's next generation: the role may start executions of itself only.
    statements = _statements(translated["Resources"]["AgentRunStateMachineRole"]["Properties"])
    starts = [s for s in statements if "states:StartExecution" in _as_list(s["Action"])]
    assert [_named(s["Resource"]) for s in starts] == [{"AgentRunStateMachine"}]
    (destination,) = properties["LoggingConfiguration"]["Destinations"]
    assert destination["CloudWatchLogsLogGroup"]["LogGroupArn"] == {"Fn::GetAtt": ["AgentRunLogGroup", "Arn"]}


def test_state_machine_may_invoke_exactly_the_workers(translated: Template) -> None:
    role = translated["Resources"]["AgentRunStateMachineRole"]["Properties"]
    invoked = set()
    for statement in _statements(role):
        if statement["Action"] == ["lambda:InvokeFunction"]:
            invoked |= _named(statement["Resource"])
    assert invoked == set(WORKERS)


def _default(source: Template, value: Any) -> Any:
    """A property's value, or its parameter's default when it is a `Ref` to one."""
    if isinstance(value, dict) and "Ref" in value:
        return source["Parameters"][value["Ref"]]["Default"]
    return value


def test_every_function_has_its_own_timeout_memory_and_the_shared_layer(source: Template, translated: Template) -> None:
    functions = _resources(translated, "AWS::Lambda::Function")
    assert set(functions) == set(FUNCTIONS) | set(DEPLOY_FUNCTIONS)
    (shared_layer,) = (
        name for name in _resources(translated, "AWS::Lambda::LayerVersion") if name.startswith("SharedLayer")
    )
    for name, (code_uri, timeout, memory) in FUNCTIONS.items():
        declared = source["Resources"][name]["Properties"]
        # Declared on the function itself, not inherited from Globals.
        # A size chosen by measurement is a parameter (ModelStepMemory, StreamMemory): its default counts.
        size = _default(source, declared["MemorySize"])
        assert (declared["CodeUri"], declared["Timeout"], size) == (code_uri, timeout, memory)
        properties = functions[name]["Properties"]
        assert (properties["Timeout"], _default(source, properties["MemorySize"])) == (timeout, memory)
        assert properties["Architectures"] == ["arm64"]
        assert properties["Runtime"] == "python3.13"
        assert "TracingConfig" not in properties  # no Lambda X-Ray segments: the run's OTLP trace instead
        layers = properties["Layers"]
        assert layers[0] == {"Ref": shared_layer}
        # Powertools (Logger, Metrics) comes with the shared layer: its public layer bundles the X-Ray SDK.
        assert all("Powertools" not in _sub_text(layer) for layer in layers), layers
    layer = source["Resources"]["SharedLayer"]
    # built by shared/stepline/stack/Makefile: wheels for the runtime, then bytecode compiled in
    assert layer["Metadata"] == {
        "BuildMethod": "makefile",
        "ContextPath": "shared/stepline/stack/",
        "BuildArchitecture": "arm64",
    }


def test_function_environment(translated: Template) -> None:
    common = {
        "STEPLINE_AGENT_TABLE": {"Ref": "AgentTable"},
        "STEPLINE_EVENTS_TABLE": {"Ref": "EventsTable"},
        "STEPLINE_BUCKET": {"Ref": "ArtifactBucket"},
        "STEPLINE_AGENT": {"Ref": "AgentRef"},
        "STEPLINE_MODEL": {"Ref": "ModelId"},
        "STEPLINE_TOOLS": {"Ref": "ToolsModule"},
        "STEPLINE_APPROVAL_TIMEOUT_SECONDS": {"Ref": "ApprovalTimeoutSeconds"},
        "STEPLINE_EVENT_RETENTION_DAYS": {"Ref": "EventRetentionDays"},
        "LOG_LEVEL": {"Ref": "LogLevel"},
        "STEPLINE_PRICES": {"Ref": "PricesFile"},
        "STEPLINE_LIMITS": {"Ref": "Limits"},
        "STEPLINE_TENANT_CLAIM": {"Ref": "TenantClaim"},
        "STEPLINE_ADMIN_CLAIM": {"Ref": "AdminClaim"},
    }
    services = set()
    read = {field.alias for field in (Settings.model_fields | UnattendedSettings.model_fields).values()}
    for name in FUNCTIONS:
        variables = translated["Resources"][name]["Properties"]["Environment"]["Variables"]
        assert common.items() <= variables.items(), name
        assert {v for v in variables if v.startswith("STEPLINE_")} <= read, name  # no dead configuration
        assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "Stepline"
        services.add(variables["POWERTOOLS_SERVICE_NAME"])
        starters = API_FUNCTIONS | RECONCILER | {"ScheduleDispatchFunction": ()}  # the dispatcher starts runs
        assert ("STEPLINE_STATE_MACHINE_ARN" in variables) == (name in starters), name
        # Provider keys travel as SSM parameter *names*, and only to the function that calls the model.
        has_keys = {"STEPLINE_OPENAI_KEY_PARAMETER", "STEPLINE_ANTHROPIC_KEY_PARAMETER"} <= variables.keys()
        assert has_keys == (name in MODEL_STEPS), name
        assert not any("API_KEY" in key for key in variables), name
    assert len(services) == len(FUNCTIONS)
    for name in MODEL_STEPS:
        model_step = translated["Resources"][name]["Properties"]["Environment"]["Variables"]
        assert model_step["STEPLINE_OPENAI_KEY_PARAMETER"] == {"Ref": "OpenAIApiKeyParameter"}
        assert model_step["STEPLINE_ANTHROPIC_KEY_PARAMETER"] == {"Ref": "AnthropicApiKeyParameter"}


def test_stream_function_streams_through_the_web_adapter(source: Template, translated: Template) -> None:
    declared = source["Resources"]["StreamFunction"]["Properties"]
    assert declared["Handler"] == "run.sh"
    properties = translated["Resources"]["StreamFunction"]["Properties"]
    assert {"Fn::Sub": WEB_ADAPTER_LAYER} in properties["Layers"]
    variables = properties["Environment"]["Variables"]
    assert variables["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/bootstrap"
    assert variables["AWS_LWA_INVOKE_MODE"] == "response_stream"
    assert variables["PORT"] == "8000"

    routes = _integrations(translated)
    streamed = {route for route, integration in routes.items() if "StreamFunction" in _sub_text(integration["uri"])}
    assert streamed == STREAM_ROUTES
    for route in STREAM_ROUTES:
        integration = routes[route]
        assert integration["type"] == "aws_proxy"
        assert integration["responseTransferMode"] == "STREAM"
        assert _sub_text(integration["uri"]).endswith(
            ":lambda:path/2021-11-15/functions/${StreamFunction.Arn}/response-streaming-invocations"
        )
    buffered = {route: i for route, i in routes.items() if route not in STREAM_ROUTES}
    assert buffered
    for route, integration in buffered.items():
        assert "responseTransferMode" not in integration, route
        assert _sub_text(integration["uri"]).endswith("/2015-03-31/functions/${ApiFunction.Arn}/invocations"), route


def test_stream_function_has_no_non_http_triggers(source: Template, translated: Template) -> None:
    # LWA's invoke mode applies to every response of the function (aws/aws-lambda-web-adapter#536).
    events = source["Resources"]["StreamFunction"]["Properties"]["Events"]
    assert {event["Type"] for event in events.values()} == {"Api"}
    mappings = _resources(translated, "AWS::Lambda::EventSourceMapping").values()
    assert not [m for m in mappings if m["Properties"]["FunctionName"] == {"Ref": "StreamFunction"}]
    permissions = [
        p["Properties"]
        for p in _resources(translated, "AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Ref": "StreamFunction"}
    ]
    assert permissions
    assert {p["Principal"] for p in permissions} == {"apigateway.amazonaws.com"}
    text = json.dumps(translated["Resources"]["AgentRunStateMachine"]) + json.dumps(
        translated["Resources"]["AgentRunStateMachineRole"]
    )
    assert "StreamFunction" not in text and "ApiFunction" not in text


# The one route without a user token: a signed approval link's token is its permission.
UNAUTHENTICATED = {("/api/approval-links/{approval_id}", "post"), ("/api/hooks/{agent}/{hook}", "post")}


def test_every_route_requires_the_cognito_authorizer_but_the_cors_preflights(translated: Template) -> None:
    body = translated["Resources"]["ChatApi"]["Properties"]["Body"]
    authorizer = body["securityDefinitions"]["CognitoAuthorizer"]["x-amazon-apigateway-authorizer"]
    # The stack's own pool when it creates one, else the UserPoolArn parameter (test_template_ui).
    assert authorizer["type"] == "cognito_user_pools"
    (provider,) = authorizer["providerARNs"]
    assert provider["Fn::If"][:2] == ["CreateUserPool", {"Fn::GetAtt": ["UserPool", "Arn"]}]
    methods = [(path, method, op) for path, ops in body["paths"].items() for method, op in ops.items()]
    assert methods
    for path, method, operation in methods:
        # A browser's preflight carries no credentials (the app answers it); a link's token is its permission.
        if method == "options" or (path, method) in UNAUTHENTICATED:
            assert operation["security"] == [{"NONE": []}], path
            uri = _sub_text(operation["x-amazon-apigateway-integration"]["uri"])
            assert uri.endswith("/2015-03-31/functions/${ApiFunction.Arn}/invocations"), path
        else:
            assert operation["security"] == [{"CognitoAuthorizer": []}], (path, method)
    assert {(path, method) for path, method, _ in methods} >= UNAUTHENTICATED
    # Every path a browser may call has its preflight (API Gateway matches the path, then the method).
    assert {path for path, ops in body["paths"].items() if "options" in ops} == set(body["paths"])
    assert translated["Resources"]["ChatApi"]["Properties"]["EndpointConfiguration"]["Types"] == ["REGIONAL"]


def _managed_policy_name(arn: Any) -> str:
    """A managed policy's name: a plain ARN, a `Fn::Sub` of one, or the policy a condition adds."""
    if isinstance(arn, dict) and "Fn::If" in arn:
        condition, attached, otherwise = arn["Fn::If"]
        assert otherwise == {"Ref": "AWS::NoValue"}, arn  # a condition only ever leaves a policy out
        assert condition == "TracesToXRay", arn
        return _managed_policy_name(attached)
    text = arn["Fn::Sub"] if isinstance(arn, dict) else arn
    return str(text).removeprefix("arn:aws:iam::aws:policy/").removeprefix("arn:${AWS::Partition}:iam::aws:policy/")


def test_iam_statements_name_specific_resources(source: Template, translated: Template) -> None:
    roles = _resources(translated, "AWS::IAM::Role")
    assert set(roles) == {f"{name}Role" for name in FUNCTIONS | DEPLOY_FUNCTIONS} | {
        "AgentRunStateMachineRole",
        "ScheduleDispatchRole",
    }
    known = set(source["Resources"]) | set(source["Parameters"])
    for role_name, role in roles.items():
        properties = role["Properties"]
        for arn in properties.get("ManagedPolicyArns", []):
            name = _managed_policy_name(arn)
            assert name in MANAGED_POLICY_EXCEPTIONS, (role_name, arn)
        for statement in _statements(properties):
            assert statement["Effect"] == "Allow"
            actions = set(_as_list(statement["Action"]))
            assert not any(action.endswith("*") for action in actions), (role_name, actions)
            if _as_list(statement["Resource"]) == ["*"]:
                assert actions <= INLINE_WILDCARD_EXCEPTIONS.get(role_name, frozenset()), (role_name, actions)
                continue
            for resource in _as_list(statement["Resource"]):
                names = _named(resource)
                # Every ARN is built from a resource or a parameter of this template.
                assert names and names <= known, (role_name, actions, resource)


def test_worker_grants_are_least_privilege(translated: Template) -> None:
    for name in WORKERS:
        statements = _statements(translated["Resources"][f"{name}Role"]["Properties"])
        actions = {action for s in statements for action in _as_list(s["Action"])}
        # The API, not a worker, resumes or starts executions.
        assert not any(action.startswith("states:") for action in actions), name
        # Only the model step reads provider keys, and only the two named parameters.
        ssm = [s for s in statements if any(a.startswith("ssm:") for a in _as_list(s["Action"]))]
        if name in MODEL_STEPS:
            assert {a for s in ssm for a in _as_list(s["Action"])} == {"ssm:GetParameter"}
            named = set().union(*(_named(s["Resource"]) for s in ssm))
            assert named == {"OpenAIApiKeyParameter", "AnthropicApiKeyParameter"}
            assert "s3:DeleteObject" in actions
        else:
            assert not ssm, name
            # The other workers read blobs and add new ones; they never delete or reconfigure the bucket.
            s3_writes = {a for a in actions if a.startswith(("s3:Put", "s3:Delete"))}
            assert s3_writes == {"s3:PutObject"}, name
        tables = set().union(*(_named(s["Resource"]) for s in statements if _is_dynamodb(s)))
        assert tables == {"AgentTable", "EventsTable"}, name
    # The key grants exist only when a parameter name is given (Fn::If on the conditions), the
    # publish grant only with stream push (test_template_push.py).
    for name in MODEL_STEPS:
        policies = translated["Resources"][f"{name}Role"]["Properties"]["Policies"]
        conditions = {p["Fn::If"][0] for p in policies if "Fn::If" in p}
        assert conditions == {"HasOpenAIKey", "HasAnthropicKey", "HasStreamPush"}


def test_api_functions_start_stop_and_resume_executions(translated: Template) -> None:
    # Both resume: an approval answer may come with the next POST /api/chat (streamed).
    actions = {
        "states:StartExecution",
        "states:StopExecution",
        "states:DescribeExecution",
        "states:SendTaskSuccess",
        "states:SendTaskFailure",
        "states:SendTaskHeartbeat",
    }
    for name in ("ApiFunction", "StreamFunction"):
        statements = _statements(translated["Resources"][f"{name}Role"]["Properties"])
        granted = {a for s in statements for a in _as_list(s["Action"]) if a.startswith("states:")}
        assert granted == actions, name
        for statement in statements:
            if any(a.startswith("states:") for a in _as_list(statement["Action"])):
                assert _named(statement["Resource"]) == {"AgentRunStateMachine"}, name


def test_the_reconciler_hears_the_state_machines_dead_executions_and_only_looks_them_up(
    source: Template, translated: Template
) -> None:
    statements = _statements(translated["Resources"]["ReconcilerFunctionRole"]["Properties"])
    states = [s for s in statements if any(a.startswith("states:") for a in _as_list(s["Action"]))]
    assert [_as_list(s["Action"]) for s in states] == [["states:DescribeExecution"]]
    assert _named(states[0]["Resource"]) == {"AgentRunStateMachine"}
    assert ":execution:" in _sub_text(states[0]["Resource"])
    tables = set().union(*(_named(s["Resource"]) for s in statements if _is_dynamodb(s)))
    assert tables == {"AgentTable", "EventsTable"}
    assert not any(a.startswith(("ssm:", "s3:Delete", "lambda:")) for s in statements for a in _as_list(s["Action"]))
    reconciler = {"Fn::GetAtt": ["ReconcilerFunction", "Arn"]}
    rules = [
        r["Properties"]
        for r in _resources(translated, "AWS::Events::Rule").values()
        if any(t["Arn"] == reconciler for t in r["Properties"]["Targets"])
    ]
    (pattern,) = [r["EventPattern"] for r in rules if "EventPattern" in r]
    assert pattern["source"] == ["aws.states"]
    assert pattern["detail-type"] == ["Step Functions Execution Status Change"]
    assert set(pattern["detail"]["status"]) == {"FAILED", "TIMED_OUT", "ABORTED"}  # never SUCCEEDED or RUNNING
    assert pattern["detail"]["stateMachineArn"] == [{"Ref": "AgentRunStateMachine"}]
    assert [r["ScheduleExpression"] for r in rules if "ScheduleExpression" in r] == ["rate(15 minutes)"]


def test_tables_are_encrypted_with_point_in_time_recovery_and_the_bucket_is_private(translated: Template) -> None:
    tables = _resources(translated, "AWS::DynamoDB::Table")
    assert set(tables) == {"AgentTable", "EventsTable"}
    for name, table in tables.items():
        properties = table["Properties"]
        assert properties["SSESpecification"] == {"SSEEnabled": True}, name
        assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}, name
        assert properties["BillingMode"] == "PAY_PER_REQUEST", name
    bucket = translated["Resources"]["ArtifactBucket"]["Properties"]
    assert set(bucket["PublicAccessBlockConfiguration"].values()) == {True}
    assert len(bucket["PublicAccessBlockConfiguration"]) == 4
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert bucket["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]


def test_outputs(translated: Template) -> None:
    outputs = translated["Outputs"]
    assert outputs["AgentRunStateMachineArn"]["Value"] == {"Ref": "AgentRunStateMachine"}
    assert "${ChatApi}.execute-api" in _sub_text(outputs["ApiUrl"]["Value"])
    assert {"AgentTableName", "EventsTableName", "ArtifactBucketName"} <= outputs.keys()


def test_every_worker_has_its_code_and_handler(source: Template) -> None:
    assert (REPO / source["Resources"]["SharedLayer"]["Properties"]["ContentUri"] / "requirements.txt").is_file()
    for name, (code_uri, _, _) in (WORKERS | RECONCILER).items():
        properties = source["Resources"][name]["Properties"]
        module, _, attribute = properties["Handler"].rpartition(".")
        app = REPO / code_uri / f"{module}.py"
        assert app.is_file(), name
        assert re.search(rf"^{attribute} = ", app.read_text(), re.MULTILINE), name


def test_api_functions_have_their_code(source: Template) -> None:
    for name, (code_uri, _, _) in API_FUNCTIONS.items():
        handler = source["Resources"][name]["Properties"]["Handler"]
        assert (REPO / code_uri / handler.replace("app.handler", "app.py")).is_file(), name


def test_sample_samconfig_fits_the_parameters(source: Template) -> None:
    parameters = source["Parameters"]
    required = {name for name, spec in parameters.items() if "Default" not in spec}
    config = tomllib.loads(SAMCONFIG.read_text())
    environments = {name for name in config if name != "version"}
    assert environments == {"dev", "staging", "prod"}
    for environment in environments:
        deploy = config[environment]["deploy"]["parameters"]
        overrides = dict(item.split("=", 1) for item in deploy["parameter_overrides"].split())
        assert required <= overrides.keys(), environment
        for name, value in overrides.items():
            spec = parameters[name]
            if "AllowedPattern" in spec:
                assert re.fullmatch(spec["AllowedPattern"], value), (environment, name, value)
            if "AllowedValues" in spec:
                assert value in spec["AllowedValues"], (environment, name, value)
            if spec["Type"] == "Number":
                assert spec.get("MinValue", 0) <= int(value) <= spec.get("MaxValue", 2**63), (environment, name)
        assert not any("KEY=" in item.upper() for item in deploy["parameter_overrides"].split()), "names, not keys"


# -- (c) the ASL file uses exactly the template's placeholders ------------------------------------


def test_asl_placeholders_match_the_definition_substitutions(source: Template) -> None:
    text = ASL.read_text()
    used = set(re.findall(r"\$\{([A-Za-z0-9_]+)\}", text))
    declared = set(source["Resources"]["AgentRunStateMachine"]["Properties"]["DefinitionSubstitutions"])
    assert used == declared == PLACEHOLDERS
    # After CloudFormation's substitution the definition is JSON (a placeholder may stand for a number).
    substituted = re.sub(
        r"\$\{([A-Za-z0-9_]+)\}",
        lambda m: f"arn:aws:lambda:us-east-1:0:function:{m[1]}",
        text,
    )
    definition = json.loads(substituted)
    assert definition["States"]


# -- helpers ---------------------------------------------------------------------------------------


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _statements(role_properties: dict[str, Any]) -> list[dict[str, Any]]:
    """Every inline statement of a role; both branches of an `Fn::If` policy count."""
    statements = []
    for policy in role_properties.get("Policies", []):
        documents = [b for b in policy["Fn::If"][1:] if "PolicyDocument" in b] if "Fn::If" in policy else [policy]
        for document in documents:
            statements.extend(document["PolicyDocument"]["Statement"])
    return statements


def _is_dynamodb(statement: dict[str, Any]) -> bool:
    return any(action.startswith("dynamodb:") for action in _as_list(statement["Action"]))


def _sub_text(value: Any) -> str:
    """The template string of a `Fn::Sub`, a plain string as it is, and "" for any other intrinsic."""
    if isinstance(value, str):
        return value
    sub = value.get("Fn::Sub", "")
    return sub if isinstance(sub, str) else sub[0]


def _named(resource: Any) -> set[str]:
    """The template resources and parameters an ARN (or list of ARNs) is built from; pseudo parameters aside."""
    names: set[str] = set()
    for item in _as_list(resource):
        if isinstance(item, str):
            continue
        if "Ref" in item:
            names.add(item["Ref"])
        elif "Fn::GetAtt" in item:
            names.add(item["Fn::GetAtt"][0])
        elif item == {"Fn::Sub": STATE_MACHINE_NAME}:  # the state machine's fixed name: itself
            names.add("AgentRunStateMachine")
        elif "Fn::Sub" in item:
            sub = item["Fn::Sub"]
            text, variables = (sub, {}) if isinstance(sub, str) else sub
            for reference in re.findall(r"\$\{([^}]+)\}", text):
                if reference.startswith("AWS::"):
                    continue
                if reference in variables:
                    names |= _named(variables[reference])
                else:
                    names.add(reference.split(".")[0])
    return {name for name in names if not name.startswith("AWS::")}


def _integrations(translated: Template) -> dict[tuple[str, str], dict[str, Any]]:
    paths = translated["Resources"]["ChatApi"]["Properties"]["Body"]["paths"]
    return {
        (path, method): operation["x-amazon-apigateway-integration"]
        for path, operations in paths.items()
        for method, operation in operations.items()
    }


def test_every_log_group_has_a_retention(translated: Template) -> None:
    groups = _resources(translated, "AWS::Logs::LogGroup")
    assert all(g["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"} for g in groups.values())
    for name in FUNCTIONS:
        config = translated["Resources"][name]["Properties"]["LoggingConfig"]
        assert config["LogGroup"]["Ref"] in groups, name


def test_the_app_streams_exactly_the_routes_the_template_streams() -> None:
    from fastapi.responses import StreamingResponse
    from fastapi.routing import APIRoute

    from stepline.api import streams

    routes = [route for route in streams.router.routes if isinstance(route, APIRoute)]
    assert all(route.response_class is StreamingResponse for route in routes)
    streamed = {
        (route.path.replace("{chat_id}", "{id}"), method.lower()) for route in routes for method in route.methods
    }
    assert streamed == STREAM_ROUTES


def test_the_unwatched_model_step_is_the_model_step_but_for_its_memory(source: Template) -> None:
    # A near-copy in the template (CloudFormation has no way to share a function's properties):
    # a grant or setting added to one must be added to the other, and this fails until it is.
    step, unwatched = (copy.deepcopy(source["Resources"][name]["Properties"]) for name in MODEL_STEPS)
    assert (step.pop("MemorySize"), unwatched.pop("MemorySize")) == (
        {"Ref": "ModelStepMemory"},
        {"Ref": "UnwatchedModelStepMemory"},
    )
    assert unwatched.pop("LoggingConfig") == {"LogGroup": {"Ref": "ModelStepUnwatchedLogGroup"}}
    for properties in (step, unwatched):
        properties.pop("Description")
    step.pop("LoggingConfig")
    # The watched step's versions, alias and SnapStart; the unwatched one is invoked as $LATEST.
    for name in ("AutoPublishAlias", "AutoPublishAliasAllProperties", "VersionDeletionPolicy", "SnapStart"):
        step.pop(name)
    variables, unwatched_variables = step["Environment"]["Variables"], unwatched["Environment"]["Variables"]
    variables.pop("STEPLINE_SNAPSTART")
    assert unwatched_variables.pop("POWERTOOLS_SERVICE_NAME") == "stepline-model-step-unwatched"
    variables.pop("POWERTOOLS_SERVICE_NAME")
    assert unwatched == step
