"""Unattended runs in the template, offline: the one dispatcher schedule and its role, the callback
queue and its sender, the inbound-webhook route and its secrets — each grant no wider than its job."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from stepline.aws.unattended import scheduled_now
from tests.unit.infra import test_template as shapes
from tests.unit.infra.test_template import Template

_as_list = shapes._as_list  # pyright: ignore[reportPrivateUsage]
_resources = shapes._resources  # pyright: ignore[reportPrivateUsage]
_statements = shapes._statements  # pyright: ignore[reportPrivateUsage]
_sub_text = shapes._sub_text  # pyright: ignore[reportPrivateUsage]

DISPATCHER = {"Fn::GetAtt": ["ScheduleDispatchFunction", "Arn"]}
TABLE_ACTIONS = frozenset(
    {
        "dynamodb:GetItem",
        "dynamodb:DeleteItem",
        "dynamodb:PutItem",
        "dynamodb:Scan",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:BatchGetItem",
        "dynamodb:DescribeTable",
        "dynamodb:ConditionCheckItem",
    }
)


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    return {action for statement in statements for action in _as_list(statement["Action"])}


def _granting(statements: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    return [s for s in statements if action in _as_list(s["Action"])]


def test_one_scheduler_schedule_invokes_the_dispatcher_every_minute_with_the_tick_s_time(translated: Template) -> None:
    (schedule,) = _resources(translated, "AWS::Scheduler::Schedule").values()  # one for every agent schedule
    properties = schedule["Properties"]
    assert properties["ScheduleExpression"] == "rate(1 minute)"
    assert properties["FlexibleTimeWindow"] == {"Mode": "OFF"}
    target = properties["Target"]
    assert target["Arn"] == DISPATCHER
    assert target["RoleArn"] == {"Fn::GetAtt": ["ScheduleDispatchRole", "Arn"]}
    assert target["RetryPolicy"]["MaximumEventAgeInSeconds"] <= 300  # a late tick is dropped, the next one runs
    # Scheduler fills in the tick's scheduled time; the dispatcher reads that time, not its clock.
    delivered = target["Input"].replace("<aws.scheduler.scheduled-time>", "2031-01-15T01:00:00Z")
    assert "<aws.scheduler.scheduled-time>" in target["Input"]
    tick = dt.datetime(2031, 1, 15, 1, 0, tzinfo=dt.UTC)
    assert scheduled_now(json.loads(delivered)) == int(tick.timestamp() * 1000)


def test_the_scheduler_s_role_may_only_invoke_the_dispatcher(translated: Template) -> None:
    role = translated["Resources"]["ScheduleDispatchRole"]["Properties"]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    assert "ManagedPolicyArns" not in role
    (grant,) = _statements(role)
    assert (grant["Action"], grant["Resource"]) == ("lambda:InvokeFunction", DISPATCHER)


def test_the_dispatcher_may_start_runs_and_nothing_else(translated: Template) -> None:
    statements = _statements(translated["Resources"]["ScheduleDispatchFunctionRole"]["Properties"])
    extra = {"states:StartExecution", "states:DescribeExecution", "events:PutEvents"}
    assert _actions(statements) <= TABLE_ACTIONS | extra  # no secret, queue, decision or stop of a run
    (start,) = _granting(statements, "states:StartExecution")
    assert "AgentRunStateMachine" in json.dumps(start["Resource"])
    (events,) = _granting(statements, "events:PutEvents")
    assert events["Resource"] == {"Fn::GetAtt": ["LifecycleEventBus", "Arn"]}
    tables = {json.dumps(s["Resource"]) for s in statements if "dynamodb:PutItem" in _as_list(s["Action"])}
    assert all("AgentTable" in t or "EventsTable" in t for t in tables) and len(tables) == 2


def test_the_callback_sender_reads_runs_and_writes_only_its_deliveries(translated: Template) -> None:
    resources = translated["Resources"]
    statements = _statements(resources["CallbackSenderFunctionRole"]["Properties"])
    writes = [
        s for s in statements if _actions([s]) & {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
    ]
    (write,) = writes
    assert _as_list(write["Action"]) == ["dynamodb:PutItem"]
    assert write["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["U#*#CB#*"]}}
    (secret,) = _granting(statements, "secretsmanager:GetSecretValue")
    assert secret["Resource"] == {"Ref": "CallbackSigningKey"}
    sqs = [s for s in statements if any(a.startswith("sqs:") for a in _as_list(s["Action"]))]
    assert [s["Resource"] for s in sqs] == [{"Fn::GetAtt": ["CallbackQueue", "Arn"]}]
    assert "sqs:SendMessage" not in _actions(statements) and "states:StartExecution" not in _actions(statements)
    mapping = resources["CallbackSenderQueueMapping"]["Properties"]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": ["CallbackQueue", "Arn"]}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]  # a failed attempt stays queued
    queue = resources["CallbackQueue"]["Properties"]
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": ["CallbackDeadLetters", "Arn"]}
    (put,) = resources["CallbackQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert put["Principal"] == {"Service": "events.amazonaws.com"} and put["Action"] == "sqs:SendMessage"
    assert put["Condition"] == {"ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": ["CallbackRule", "Arn"]}}}
    rule = resources["CallbackRule"]["Properties"]
    assert rule["EventBusName"] == {"Ref": "LifecycleEventBus"}
    assert [t["Arn"] for t in rule["Targets"]] == [{"Fn::GetAtt": ["CallbackQueue", "Arn"]}]


def test_hooks_are_served_by_the_api_function_which_alone_reads_their_secrets_under_the_prefix(
    translated: Template,
) -> None:
    resources = translated["Resources"]
    paths = resources["ChatApi"]["Properties"]["Body"]["paths"]
    hook = paths["/api/hooks/{agent}/{hook}"]["post"]
    assert hook["security"] == [{"NONE": []}]  # the signature is the permission, checked by the function
    uri = _sub_text(hook["x-amazon-apigateway-integration"]["uri"])
    assert uri.endswith("/functions/${ApiFunction.Arn}/invocations")
    variables = resources["ApiFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["STEPLINE_HOOK_SECRET_PREFIX"] == {"Ref": "HookSecretPrefix"}
    readers: dict[str, list[str]] = {}
    for name, role in _resources(translated, "AWS::IAM::Role").items():
        for statement in _granting(_statements(role["Properties"]), "secretsmanager:GetSecretValue"):
            for resource in _as_list(statement["Resource"]):
                if "${HookSecretPrefix}" in _sub_text(resource):
                    readers.setdefault(name, []).append(_sub_text(resource))
    assert readers == {
        "ApiFunctionRole": [
            "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:${HookSecretPrefix}*"
        ]
    }
