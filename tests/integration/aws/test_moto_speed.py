"""moto's interpreter with Stepline's caches (`stepline.local.moto_speed`): the same results, the work done once."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace
from typing import Any

import pytest
from moto import mock_aws

from stepline.llm.scripted import ScriptedModel
from stepline.local.backend import MOTO_CONFIG
from stepline.local.moto_speed import install_sfn_speedups
from stepline.stack import ASL
from tests.support.local_aws import local_aws
from tests.support.runs import USER, begin, final_message, text_step


def _worker_of(definition: str) -> Any:
    details = SimpleNamespace(state_machine_details=SimpleNamespace(definition=definition))
    return SimpleNamespace(_evaluation_details=details)


def test_a_definition_is_parsed_once_and_each_execution_gets_a_program_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    install_sfn_speedups()
    parses: list[str] = []
    parse = AmazonStateLanguageParser.parse

    def counted(definition: str) -> Any:
        parses.append(definition)
        return parse(definition)

    monkeypatch.setattr(AmazonStateLanguageParser, "parse", staticmethod(counted))
    asl = json.loads(ASL.read_text())
    asl["Comment"] = f"{asl['Comment']} ({threading.get_ident()}: a definition no other test parsed)"
    definition = json.dumps(asl)
    entrypoint = ExecutionWorker._get_evaluation_entrypoint  # pyright: ignore[reportPrivateUsage]
    first, second = entrypoint(_worker_of(definition)), entrypoint(_worker_of(definition))  # pyright: ignore[reportArgumentType]
    assert parses == [definition]
    assert first is not second and type(first) is type(second)  # evaluated apart: no state shared between runs
    other = json.dumps({**asl, "Comment": "another definition"})
    entrypoint(_worker_of(other))  # pyright: ignore[reportArgumentType]
    assert parses == [definition, other]  # keyed by the definition: a changed state machine is parsed anew


def test_the_lambda_client_and_the_json_paths_are_built_once() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
    from moto.stepfunctions.parser.asl.utils import json_path

    install_sfn_speedups()
    client_for: Any = getattr(lambda_eval_utils, "boto_client_for")  # noqa: B009 - what moto's tasks call
    parse: Any = getattr(json_path, "parse")  # noqa: B009
    with mock_aws(config=MOTO_CONFIG):
        client = client_for(region="us-east-1", service="lambda", state_credentials=None)
        again = client_for(region="us-east-1", service="lambda", state_credentials=None)
        elsewhere = client_for(region="eu-west-1", service="lambda", state_credentials=None)
    assert client is again and elsewhere is not client
    assert parse("$.step.next") is parse("$.step.next")
    assert json_path.extract_json("$.step.next", {"step": {"next": "done"}}) == "done"


def test_concurrent_runs_each_complete_with_their_own_message() -> None:
    model = ScriptedModel.from_script([text_step("Same words.") for _ in range(4)])
    with local_aws(model) as aws:
        run_ids = [begin(aws) for _ in range(4)]  # four executions at once on the cached program
        for run_id in run_ids:
            assert aws.wait_execution(run_id) == "SUCCEEDED"
        for run_id in run_ids:
            message = final_message(aws, run_id)
            assert (message["status"], message["content"]) == ("completed", "Same words.")
            assert message["metadata"]["runId"] == run_id
            assert aws.services.store.get_run(USER, run_id).status == "completed"
        model.assert_consumed()  # one model step per run: no execution ran another's step
