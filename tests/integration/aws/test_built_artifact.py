"""The built artifact works: `sam build`, then every built function imported and invoked in a clean Python 3.13.

`sam build` (aws-sam-cli, in its own Python 3.13 venv `.venv-sam`: it cannot share `.venv`, its
pins conflict with the project's boto3) builds the template as a team would, with the host's
architecture instead of arm64 so that compiled wheels (pydantic-core, jiter) import on this
machine; the requirements, the layout and the handlers are the deployed ones. Then one
`python3.13 -I -S` process (no site-packages) sees only `.aws-sam/build` and a runtime folder
(`.lambda-runtime`: boto3 as Lambda's runtime has it, and moto; Powertools and OpenTelemetry come
with the shared layer),
and invokes the API function with API Gateway proxy events (health, a chat) and the workers with
state-machine task inputs (tests/integration/aws/built_artifact_driver.py).

Prerequisites (`bash .ci/install` makes them when Python 3.13 is found): a `python3.13`
(on PATH or under pyenv), `.venv-sam/bin/sam`, `.lambda-runtime/`. Without them the test is
skipped with the reason. One build per session; it is the slowest test of its folder.
"""

from __future__ import annotations

import glob
import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from stepline.local.resources import resources

REPO = Path(__file__).resolve().parents[3]
DRIVER = Path(__file__).with_name("built_artifact_driver.py")
RUNTIME = REPO / ".lambda-runtime"
SAM = REPO / ".venv-sam" / "bin" / "sam"
RUNTIME_FUNCTIONS = (
    "ModelStepFunction",
    "ModelStepUnwatchedFunction",
    "AwaitInputFunction",
    "ExpireInputFunction",
    "FinalizeRunFunction",
    "FailRunFunction",
    "ApiFunction",
)
SCRIPT = {"steps": [[
    {"type": "text-start", "id": "t"},
    {"type": "text-delta", "id": "t", "delta": "Built and answering."},
    {"type": "text-end", "id": "t"},
    {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {"inputTokens": {"total": 3}}},
]]}  # fmt: skip


def python313() -> str | None:
    """A Python 3.13 interpreter that runs (a pyenv shim on PATH may not): PATH first, then pyenv's."""
    candidates = [shutil.which("python3.13"), *sorted(glob.glob("/root/.pyenv/versions/3.13*/bin/python3.13"))]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.13*/bin/python3.13")))
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 13))"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if probe.stdout.strip() == "True":
            return candidate
    return None


def _missing() -> str | None:
    if python313() is None:
        return "no Python 3.13 interpreter (sam build needs python3.13 on PATH, or --use-container)"
    if not SAM.is_file():
        return f"{SAM} is missing (python3.13 -m venv .venv-sam && .venv-sam/bin/pip install aws-sam-cli==1.170.0)"
    if not RUNTIME.is_dir():
        return f"{RUNTIME} is missing (bash .ci/install makes it)"
    if not (REPO / "web" / "dist" / "index.html").is_file():
        return "web/dist is not built (cd web && npm run build)"
    return None


def _host_template(target: Path) -> Path:
    """template.yaml with absolute code paths and the host's architecture (x86_64 here)."""
    text = (REPO / "template.yaml").read_text()
    arch = "x86_64" if platform.machine() in ("x86_64", "AMD64") else "arm64"
    text = re.sub(r"\barm64\b", arch, text)
    text = re.sub(r"(CodeUri|ContentUri|DefinitionUri|ContextPath): (\S+)", lambda m: f"{m[1]}: {REPO / m[2]}", text)
    path = target / "template.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = _missing()
    if reason is not None:
        print(f"skipped: {reason}")  # also in the output of a run without -ra
        pytest.skip(reason)
    interpreter = python313()
    assert interpreter is not None
    work = tmp_path_factory.mktemp("sam")
    build = work / "build"
    env = {
        **os.environ,
        "PATH": f"{Path(interpreter).parent}:{os.environ['PATH']}",
        "SAM_CLI_TELEMETRY": "0",
        "STEPLINE_BUILD_ARCH": "x86_64" if platform.machine() in ("x86_64", "AMD64") else "arm64",
        "PYTHON": interpreter,  # shared/stepline/stack/Makefile's: the runtime's Python
    }
    result = subprocess.run(
        [
            *(str(SAM), "build", "--template-file", str(_host_template(work)), "--build-dir", str(build)),
            *("--parallel", "--cached", "--cache-dir", str(REPO / ".aws-sam" / "test-cache")),
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return build


def _environment(scripted: Path) -> dict[str, str]:
    return {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "STEPLINE_AGENT_TABLE": "agent",
        "STEPLINE_EVENTS_TABLE": "events",
        "STEPLINE_BUCKET": "artifacts",
        "STEPLINE_MODEL": f"scripted:{scripted}",
        "STEPLINE_EVENT_BUS": "lifecycle",
        "POWERTOOLS_METRICS_NAMESPACE": "Stepline",
        "LOG_LEVEL": "WARNING",
        "STEPLINE_TRACING": "otlp",  # to the driver's own receiver
    }


def _tables() -> dict[str, dict[str, Any]]:
    names = {"AgentTable": "STEPLINE_AGENT_TABLE", "EventsTable": "STEPLINE_EVENTS_TABLE"}
    keys = ("AttributeDefinitions", "KeySchema", "BillingMode", "GlobalSecondaryIndexes")
    return {
        names[logical]: {k: props[k] for k in keys if k in props}
        for logical, props in resources("AWS::DynamoDB::Table").items()
    }


@pytest.mark.built
@pytest.mark.timeout(1200)  # a cold `sam build` downloads the layer's wheels
def test_every_built_function_imports_and_answers_in_a_clean_python_313(built: Path, tmp_path: Path) -> None:
    built_template = yaml.safe_load(
        re.sub(r"!(\w+)", r"\1", (built / "template.yaml").read_text())
    )  # the built template names each function's built folder
    folders = {name: str(built / name) for name in RUNTIME_FUNCTIONS}
    assert all(Path(f, "app.py").is_file() for f in folders.values())
    assert (built / "StreamFunction" / "stream.py").is_file()
    assert "UiDeployFunction" in built_template["Resources"]
    assert (built / "SharedLayer" / "python" / "stepline").is_dir(), "the shared layer lacks stepline"
    scripted = tmp_path / "script.json"
    scripted.write_text(json.dumps(SCRIPT))
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "runtime": str(RUNTIME),
                "layer": str(built / "SharedLayer" / "python"),
                "functions": folders,
                "stream": str(built / "StreamFunction"),
                "env": _environment(scripted),
                "tables": _tables(),
            }
        )
    )
    interpreter = python313()
    assert interpreter is not None
    result = subprocess.run(
        [interpreter, "-I", "-S", str(DRIVER), str(config)],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},  # nothing of this process's environment leaks in
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-6000:]
    answers = json.loads(result.stdout.strip().splitlines()[-1])
    assert answers["python"].startswith("3.13.")
    assert answers["imported"] == sorted(RUNTIME_FUNCTIONS)
    assert answers["health"] == {"status": 200, "body": {"status": "ok", "model": "scripted:script"}}
    assert answers["stream"] == {"/api/health": 200, "/api/agents": 404}  # the stream function's routes only
    assert answers["agents"] == 200  # served by the buffered function
    assert answers["chat"]["status"] == 200
    assert "Built and answering." in answers["chat"]["body"] and answers["chat"]["body"].rstrip().endswith(
        "data: [DONE]"
    )
    tasks = answers["tasks"]
    assert tasks["ModelStepFunction"]["next"] == "finished"
    assert tasks["ModelStepUnwatchedFunction"]["next"] == "finished"
    assert tasks["FinalizeRunFunction"]["status"] == "completed"
    assert tasks["FailRunFunction"]["status"] == "completed"  # the first end stands
    assert set(tasks) == set(RUNTIME_FUNCTIONS) - {"ApiFunction"}
    # Traces left the built functions over OTLP; the X-Ray SDK is nowhere in the build.
    assert answers["traces"] and all(size > 0 for size in answers["traces"])
    assert answers["loaded"] == ["opentelemetry"]
    assert answers["xray_sdk"] is False
    assert not list((built / "SharedLayer" / "python").glob("aws_xray_sdk*"))


# Runs in `python3.13 -I -S` with a read-only copy of one function and the shared layer on sys.path:
# counts every module compiled from source under the copy (SourceLoader.source_to_code: what an
# import without a usable .pyc runs), then imports the function's app.py as Lambda's init does.
BYTECODE_PROBE = r"""
import json, sys
copy, function, layer, runtime = sys.argv[1:5]
sys.path[:0] = [function, layer, runtime]
import _frozen_importlib_external as external
compiled = []
source_to_code = external.SourceLoader.source_to_code
def counting(self, data, path, *args, **kwargs):
    if str(path).startswith(copy):
        compiled.append(str(path))
    return source_to_code(self, data, path, *args, **kwargs)
external.SourceLoader.source_to_code = counting
import app
ours = [m for m in sys.modules.values() if str(getattr(m, "__file__", "") or "").startswith(copy)]
print(json.dumps({"compiled": compiled, "modules": len(ours)}))
"""


def _tree_state(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


@pytest.mark.built
@pytest.mark.timeout(1200)
def test_the_built_artifact_carries_bytecode_that_python_uses_on_a_read_only_copy(built: Path, tmp_path: Path) -> None:
    layer = built / "SharedLayer" / "python"
    folders = [built / name for name in RUNTIME_FUNCTIONS]
    # Every module of the layer and of each function has an unchecked-hash .pyc for Python 3.13
    # (PEP 552 flags 0b01: hash-based, source not checked), so no import compares or compiles.
    missing: list[str] = []
    for root in (layer, *folders):
        for source in root.rglob("*.py"):
            pyc = source.parent / "__pycache__" / f"{source.stem}.cpython-313.pyc"
            if not pyc.is_file():
                missing.append(str(source.relative_to(built)))
            else:
                assert int.from_bytes(pyc.read_bytes()[4:8], "little") == 0b01, pyc
    assert not missing, f"{len(missing)} modules without bytecode, e.g. {missing[:5]}"
    copy = tmp_path / "opt"
    shutil.copytree(built, copy, symlinks=True)
    for path in copy.rglob("*"):  # read-only, as Lambda's /var/task and /opt are
        path.chmod(path.stat().st_mode & ~0o222)
    before = _tree_state(copy)
    interpreter = python313()
    assert interpreter is not None
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    env = {"PATH": os.environ["PATH"], **_environment(tmp_path / "script.json"), "STEPLINE_TRACING": "off"}
    for name in RUNTIME_FUNCTIONS:
        result = subprocess.run(
            [interpreter, "-I", "-S", "-c", BYTECODE_PROBE, str(copy), str(copy / name)]
            + [str(copy / "SharedLayer" / "python"), str(RUNTIME)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr[-4000:]
        answer = json.loads(result.stdout.strip().splitlines()[-1])
        assert answer["modules"] > 20, (name, answer)  # stepline and its dependencies came from the copy
        assert answer["compiled"] == [], (name, answer["compiled"][:5])
    assert _tree_state(copy) == before  # nothing written (no __pycache__ made, no .pyc rewritten)
