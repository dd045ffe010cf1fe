"""`stepline runs list` and `stepline runs show` over a data folder, after the backend that wrote it stopped."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pytest

from stepline.cli import main
from stepline.llm.scripted import ScriptedModel
from stepline.local.backend import local_backend
from stepline.runtime import waits
from stepline.runtime.services import Services
from tests.support.local_aws import LocalAws
from tests.support.runs import USER, Counted, begin, call_step, text_step

PROMPT = "Please delete /srv/old.csv, my key is sk-abcdefghijklmnopqrstuvwx"


def _run(args: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return main(args, out=out), out.getvalue()


def _wait(services: Services, run_id: str, status: set[str]) -> None:
    deadline = time.monotonic() + 30
    while services.store.get_run(USER, run_id).status not in status:
        assert time.monotonic() < deadline, services.store.get_run(USER, run_id).status
        time.sleep(0.02)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A data folder holding one finished run: a tool behind an approval, then an answer."""
    data = tmp_path_factory.mktemp("stepline-data")
    delete = Counted("delete_file", {"deleted": True})
    model = ScriptedModel.from_script(
        [call_step("delete_file", json.dumps({"path": "/srv/old.csv"})), text_step("Gone.")]
    )

    def make(**backend: Any) -> Services:
        return Services(model=model, tools=[delete.tool], tool_approval={"delete_file": "user-approval"}, **backend)

    with local_backend(make, data_dir=data, engine="local") as backend:
        aws = LocalAws(backend.services, None, backend.routes)  # type: ignore[arg-type]  # no moto workflow here
        run_id = begin(aws, PROMPT)
        _wait(backend.services, run_id, {"waiting_approval"})
        (pending,) = backend.services.store.pending_approvals(USER)
        while not backend.services.store.get_approval(USER, pending.approval_id).task_token:
            time.sleep(0.02)
        waits.decide(backend.services, USER, pending.approval_id, approved=True, reason=None)
        _wait(backend.services, run_id, {"completed"})
    return data, run_id


def test_runs_list_shows_the_run_from_the_folder(folder: tuple[Path, str]) -> None:
    data, run_id = folder
    status, out = _run(["runs", "list", "--data", str(data)])
    assert status == 0
    (line,) = [line for line in out.splitlines() if line.startswith(run_id)]
    assert "completed" in line and "scripted:script" in line and USER in line
    status, out = _run(["runs", "list", "--data", str(data), "--json"])
    (row,) = json.loads(out)
    assert (row["runId"], row["status"], row["userId"], row["steps"]) == (run_id, "completed", USER, 2)


def test_runs_show_prints_each_step_with_its_request_tools_and_timings(folder: tuple[Path, str]) -> None:
    data, run_id = folder
    status, out = _run(["runs", "show", run_id, "--data", str(data)])
    assert status == 0, out
    assert out.startswith(f"run {run_id}  completed")
    assert "step 0  tool-calls" in out and "step 1  stop" in out
    assert "Please delete /srv/old.csv" in out  # the prompt as sent
    assert 'tool       delete_file: {"type":"object"}' in out  # the tool's schema
    assert "approved by alice" in out and "first token" in out
    assert "sk-abcdefghijklmnopqrstuvwx" not in out  # masked when recorded
    status, raw = _run(["runs", "show", run_id, "--data", str(data), "--json"])
    view = json.loads(raw)
    assert [s["stepNumber"] for s in view["steps"]] == [0, 1]
    assert view["steps"][0]["tools"][0]["approval"]["decidedBy"] == USER


def test_an_unknown_run_or_folder_is_a_clear_error(folder: tuple[Path, str], tmp_path: Path, capsys: Any) -> None:
    data, _ = folder
    assert _run(["runs", "show", "run-nope", "--data", str(data)])[0] == 2
    assert "no run run-nope" in capsys.readouterr().err
    assert _run(["runs", "list", "--data", str(tmp_path / "missing")])[0] == 2
    assert "no stepline dev data" in capsys.readouterr().err
    assert _run(["runs", "show", "x", "--url", "http://127.0.0.1:9"])[0] == 2
    assert "cannot reach" in capsys.readouterr().err
