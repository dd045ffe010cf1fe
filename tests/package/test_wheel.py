"""Stepline as a user installs it: the sdist and the wheel built from a clean copy of this tree, the wheel
installed with its `local` extra into a fresh virtual environment outside the checkout, and run there.

`python -m build` makes the sdist (its build hook runs `npm ci && npm run build` in `web/`) and then
the wheel from the sdist (with the UI the sdist carries, no Node.js), as a release does. The venv's
`stepline` then runs with a PATH that holds nothing but the venv, so no Node.js and no checkout can
help it: `stepline --version`; `stepline dev` serving the UI at `/` and a chat to `[DONE]`;
`stepline init`, the generated project installed as its README says (Stepline from the wheel's folder,
as a package index would serve it) and its own tests, and its template checked offline.

One build and one venv for the module; slow (a few minutes), marked `wheel`. Figures (sizes, build and
install times) are printed, not asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stepline import __version__
from stepline.protocol.sse import decode_ui_message_stream
from tests.package.test_stack_resources import anchors_and_aliases
from tests.readme.test_run_command import fresh_copy
from tests.support.dev_process import dev_process, free_port
from tests.support.project_template import validate_offline

REPO = Path(__file__).resolve().parents[2]
BUILD_SECONDS = 900
pytestmark = [pytest.mark.wheel, pytest.mark.timeout(2 * BUILD_SECONDS)]


def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_SECONDS, check=False, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{command}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist and the wheel, built from a fresh copy of the tree (what a clean clone holds)."""
    work = tmp_path_factory.mktemp("release")
    checkout, out = work / "stepline", work / "dist"
    fresh_copy(checkout)
    started = time.monotonic()
    run([sys.executable, "-m", "build", "--outdir", str(out), str(checkout)])
    (sdist,), (wheel,) = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    print(
        f"\nbuild (sdist with the UI's npm build, then the wheel from it): {time.monotonic() - started:.1f} s; "
        f"sdist {sdist.stat().st_size / 1e6:.2f} MB, wheel {wheel.stat().st_size / 1e6:.2f} MB"
    )
    return sdist, wheel


@pytest.fixture(scope="module")
def venv(built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment outside the checkout, with `stepline[local]` from the wheel."""
    root = tmp_path_factory.mktemp("user") / "venv"
    assert not root.is_relative_to(REPO)
    run([sys.executable, "-m", "venv", str(root)])
    started = time.monotonic()
    run([str(root / "bin" / "python"), "-m", "pip", "install", "--quiet", f"{built[1]}[local]"])
    print(f"\npip install 'stepline-*.whl[local]' into a fresh venv: {time.monotonic() - started:.1f} s")
    return root


def user_env(venv: Path, **extra: str) -> dict[str, str]:
    """A shell with the venv and nothing of this checkout: no PYTHONPATH, no node or npm on PATH."""
    keep = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "TMPDIR") or k.startswith("PIP_")}
    return keep | {"PATH": str(venv / "bin")} | extra


def test_the_artifacts_carry_what_runs(built: tuple[Path, Path]) -> None:
    sdist, wheel = built
    with tarfile.open(sdist) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"setup.py", "LICENSE", "template.yaml", "web/package-lock.json", "web/dist/index.html"} <= members
    assert "shared/stepline/stack/statemachine/agent_run.asl.json" in members
    assert not any("node_modules" in m or m.endswith(".map") for m in members)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert archive.read("stepline/stack/template.yaml") == (REPO / "template.yaml").read_bytes()
        run_sh = archive.getinfo("stepline/stack/functions/api/run.sh")
        metadata = archive.read(f"stepline-{__version__}.dist-info/METADATA").decode()
    assert {"stepline/webui/index.html", "stepline/stack/statemachine/agent_run.asl.json", "stepline/py.typed"} <= names
    assert any(n.startswith("stepline/webui/assets/") and n.endswith(".js") for n in names)
    assert "stepline/samples/demo-book.json" in names and "stepline/stack/functions/model_step/app.py" in names
    assert f"stepline-{__version__}.dist-info/licenses/LICENSE" in names
    assert not any(n.endswith((".map", ".pyc")) or "/tests/" in n for n in names)
    assert (run_sh.external_attr >> 16) & 0o111, "run.sh must stay executable"
    for field in ("License-Expression: Apache-2.0", "Project-URL: Source", "Classifier: Typing :: Typed"):
        assert field in metadata, field
    assert "Provides-Extra: lambda" in metadata


def test_version(venv: Path) -> None:
    done = run([str(venv / "bin" / "stepline"), "--version"], env=user_env(venv))
    assert done.stdout == f"stepline {__version__}\n"
    where = run([str(venv / "bin" / "python"), "-c", "import stepline; print(stepline.__file__)"], env=user_env(venv))
    assert Path(where.stdout.strip()).is_relative_to(venv)  # the installed package, not this checkout


@pytest.fixture
def served(venv: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port, log = free_port(), tmp_path / "dev.log"
    command = [str(venv / "bin" / "stepline"), "dev", "--port", str(port)]
    with dev_process(command, cwd=tmp_path, env=user_env(venv), log=log, port=port) as url:
        yield url, log


def test_stepline_dev_serves_the_ui_and_a_chat_without_node(served: tuple[str, Path], venv: Path) -> None:
    url, log = served
    with httpx.Client(base_url=url, timeout=30) as client:
        page = client.get("/")
        assets = [a for a in page.text.split('"') if a.startswith("/assets/")]
        script = client.get(assets[0]) if assets else None
        body = {
            "id": "wheel-chat",
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}],
            "trigger": "submit-message",
        }
        answer = client.post("/api/chat", json=body)
    packaged = next(venv.glob("lib/python*/site-packages/stepline/webui/index.html"))
    assert page.status_code == 200 and page.text == packaged.read_text()
    assert script is not None and script.status_code == 200 and len(script.content) > 10_000
    assert answer.status_code == 200 and answer.text.rstrip().endswith("data: [DONE]")
    chunks = decode_ui_message_stream(answer.text)
    assert chunks[0].type == "start" and chunks[-1].type == "finish"
    banner = log.read_text()
    assert "web UI   served at /" in banner and "Traceback" not in banner


def test_init_writes_a_project_whose_tests_pass_and_whose_template_validates(
    venv: Path, built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = user_env(venv, PIP_FIND_LINKS=" ".join([str(built[1].parent), os.environ.get("PIP_FIND_LINKS", "")]))
    init = run([str(venv / "bin" / "stepline"), "init", "my-notes"], cwd=tmp_path, env=env)
    assert "template.yaml" in init.stdout and "Skipped" not in init.stdout
    project = tmp_path / "my-notes"
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-e", ".[dev]"], cwd=project, env=env)
    tests = run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project, env=env)
    assert "5 passed" in tests.stdout
    text = (project / "template.yaml").read_text()
    assert anchors_and_aliases(text) == []
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    _, translated = validate_offline(project)  # cfn-lint, paths inside the project, the SAM translator
    assert any(r["Type"] == "AWS::StepFunctions::StateMachine" for r in translated["Resources"].values())
    layer = (project / "stack" / "layer" / "requirements.txt").read_text()
    assert f"stepline[lambda]=={__version__}" in layer
