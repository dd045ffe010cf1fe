"""`stepline init` end to end: the project it writes passes its own tests, `stepline dev` serves its agent
from the project directory (a chat turn calls the project's tool), and its template validates offline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepline.cli import main
from stepline.project.scaffold import InitError, init_project
from stepline.project.template import AGENT_LAYER
from stepline.protocol.sse import decode_ui_message_stream
from stepline.stack.cfn_yaml import load
from tests.support.dev_process import dev_process, free_port
from tests.support.project_template import validate_offline


def load_template(path: Path) -> dict[str, Any]:
    return load(path.read_text())


REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "shared"
STEPLINE = Path(sys.executable).with_name("stepline")  # the console script, as a user runs it


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("projects") / "my-notes"
    assert main(["init", str(directory)]) == 0
    return directory


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPLINE_", "AWS_", "OPENAI_", "ANTHROPIC_"))}
    return env | {"PYTHONPATH": os.pathsep.join([str(SHARED), "src"])} | extra  # as `pip install -e .` would


def test_it_writes_the_project_files_and_refuses_to_overwrite_them(project: Path) -> None:
    written = {str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()}
    ours = {p for p in written if not p.startswith("stack/")}
    assert ours == {
        "pyproject.toml",
        "src/agent.py",
        "src/book.json",
        "src/requirements.txt",
        "tests/test_agent.py",
        "README.md",
        ".gitignore",
        "template.yaml",
    }
    stack = written - ours
    assert {"stack/layer/requirements.txt", "stack/statemachine/agent_run.asl.json", "stack/web/index.html"} <= stack
    assert "stack/functions/model_step/app.py" in stack and "stack/functions/api/run.sh" in stack
    assert os.access(project / "stack/functions/api/run.sh", os.X_OK)  # the stream function's start script
    assert not any(p.endswith((".map", ".pyc")) for p in stack)
    readme = (project / "README.md").read_text()
    assert "STEPLINE_AGENT=agent:agent stepline dev" in readme and "python -m pytest" in readme
    assert 'pip install -e ".[dev]"' in readme and str(REPO) not in readme  # stepline is a dependency, not a path
    (dev_line,) = [line for line in readme.splitlines() if line.startswith("STEPLINE_AGENT=agent:agent stepline dev")]
    assert "in memory" not in dev_line and ".stepline/" in readme  # dev keeps its state in .stepline/
    assert "stepline==0.1.0" in (project / "pyproject.toml").read_text()
    ignored = (project / ".gitignore").read_text().splitlines()
    assert {".stepline/", ".aws-sam/", ".venv/", "__pycache__/", ".pytest_cache/"} <= set(ignored)
    with pytest.raises(InitError, match="already exist"):
        init_project(project)


def test_the_generated_tests_pass(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 passed" in done.stdout


@pytest.fixture
def served(project: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port, log = free_port(), tmp_path / "dev.log"
    env = clean_env(STEPLINE_AGENT="agent:agent", STEPLINE_WEB_DIST=str(tmp_path / "no-ui"))
    with dev_process([str(STEPLINE), "dev", "--port", str(port)], cwd=project, env=env, log=log, port=port) as url:
        yield url, log


def test_stepline_dev_serves_the_projects_agent_from_its_directory(served: tuple[str, Path]) -> None:
    url, log = served
    body = {
        "id": "init-chat",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "convert a temperature"}]}],
        "trigger": "submit-message",
    }
    with httpx.Client(base_url=url, timeout=30) as client:
        answer = client.post("/api/chat", json=body)
        stored = client.get("/api/conversations/init-chat").json()
    chunks = decode_ui_message_stream(answer.text)
    assert chunks[0].type == "start" and chunks[-1].type == "finish"
    parts = stored["messages"][1]["parts"]
    (tool,) = [p for p in parts if p["type"] == "tool-convert_temperature"]
    assert (tool["state"], tool["output"]) == ("output-available", {"value": 37.8, "unit": "C"})
    assert "100 °F is 37.8 °C" in str(parts)
    banner = log.read_text()
    assert "convert_temperature" in banner and "save_note (approval)" in banner


def test_the_projects_template_validates_offline(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    source, translated = validate_offline(project)
    assert source["Resources"][AGENT_LAYER]["Properties"]["ContentUri"] == "src/"
    functions = {k: r for k, r in translated["Resources"].items() if r["Type"] == "AWS::Lambda::Function"}
    stepline_functions = [
        r
        for r in load_template(REPO / "template.yaml")["Resources"].values()
        if r["Type"] == "AWS::Serverless::Function"
    ]
    assert len(functions) == len(stepline_functions)  # every function of Stepline's template, and no other
    (layer,) = [k for k in translated["Resources"] if k.startswith(AGENT_LAYER)]
    runtime = {  # the functions that run Stepline (deploy-time plumbing has no shared layer and no agent)
        name
        for name, r in source["Resources"].items()
        if {"Ref": "SharedLayer"} in r.get("Properties", {}).get("Layers", [])
    }
    assert runtime
    for name, function in functions.items():
        if name not in runtime:
            continue
        properties = function["Properties"]
        assert properties["Layers"][1] == {"Ref": layer}, name  # right after Stepline's SharedLayer
        agent = properties["Environment"]["Variables"]["STEPLINE_AGENT"]
        assert source["Parameters"][agent["Ref"]]["Default"] == "agent:agent", name


def test_template_only_writes_the_template_again(project: Path, tmp_path: Path) -> None:
    copy_dir = tmp_path / "again"
    copy_dir.mkdir()
    (copy_dir / "src").mkdir()
    (copy_dir / "src" / "agent.py").write_text("# mine\n")
    (copy_dir / "stack" / "functions" / "gone").mkdir(parents=True)  # a function an older release had
    scaffold = init_project(copy_dir, template_only=True)
    assert scaffold.written == ["template.yaml", "stack/"]
    assert (copy_dir / "src" / "agent.py").read_text() == "# mine\n"
    assert not (copy_dir / "stack" / "functions" / "gone").exists()  # stack/ is written whole
    assert (copy_dir / "stack" / "functions" / "model_step" / "app.py").is_file()
    assert (
        load_template(copy_dir / "template.yaml")["Resources"].keys()
        == load_template(project / "template.yaml")["Resources"].keys()
    )


def test_the_generated_code_is_ruff_clean_under_its_own_settings(project: Path) -> None:
    for command in (["check", "."], ["format", "--check", "."]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *command],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr


PYRIGHT = REPO / "tests" / "node" / "node_modules" / ".bin" / "pyright"


@pytest.mark.skipif(not PYRIGHT.exists(), reason="pyright is installed by .ci/install (npm ci in tests/node)")
def test_the_generated_code_is_pyright_strict_clean(project: Path, tmp_path: Path) -> None:
    checked = tmp_path / "checked"
    shutil.copytree(project, checked)
    settings = {"extraPaths": [str(SHARED), "src"], "typeCheckingMode": "strict", "reportMissingTypeStubs": False}
    (checked / "pyrightconfig.json").write_text(json.dumps(settings))

    def pyright() -> subprocess.CompletedProcess[str]:
        command = [str(PYRIGHT), "--pythonpath", sys.executable]
        return subprocess.run(command, cwd=checked, capture_output=True, text=True, timeout=300, check=False)

    clean = pyright()
    assert clean.returncode == 0, clean.stdout[-3000:] + clean.stderr
    with (checked / "src" / "agent.py").open("a") as agent:
        agent.write('\nwrong: int = "not an int"\n')  # the check reads these files: a type error fails it
    assert pyright().returncode != 0
