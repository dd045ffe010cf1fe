"""`sam build` of a `stepline init` project deploys its agent, never its local data.

The project is used as a person uses it: `stepline dev` has left `.stepline/` (the local SQLite store
with the conversations), there is a virtual environment, caches, a previous build and the tests.
`sam build AgentLayer` (aws-sam-cli in `.venv-sam`, Python 3.13, as tests/integration/aws/
test_built_artifact.py does; skipped without them) builds the layer, and the layer holds exactly the
agent's files.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from stepline.project.scaffold import init_project
from tests.integration.aws.test_built_artifact import SAM, python313

BUILT_SECONDS = 600


def seed_local_state(project: Path) -> None:
    """What a project folder holds after a few days of work."""
    data = project / ".stepline"
    data.mkdir()
    with sqlite3.connect(data / "stepline.db") as db:
        db.execute("create table items (pk text, body text)")
        db.execute("insert into items values ('CONV#1', 'a private conversation')")
    (data / "blobs").mkdir()
    (data / "blobs" / "note.md").write_text("a private note")
    for folder in (".venv/lib", "src/__pycache__", ".pytest_cache", ".aws-sam/build", "tests/__pycache__"):
        (project / folder).mkdir(parents=True, exist_ok=True)
    (project / ".venv" / "lib" / "site.py").write_text("")
    (project / "src" / "__pycache__" / "agent.cpython-313.pyc").write_bytes(b"\0")
    (project / ".env").write_text("OPENAI_API_KEY=sk-not-for-the-cloud\n")


@pytest.mark.built
@pytest.mark.timeout(BUILT_SECONDS + 60)
def test_the_agent_layer_holds_the_agents_files_and_no_local_data(tmp_path: Path) -> None:
    interpreter = python313()
    if interpreter is None or not SAM.is_file():
        pytest.skip("sam build needs Python 3.13 and .venv-sam/bin/sam (bash .ci/install makes them)")
    project = tmp_path / "notes"
    init_project(project)
    seed_local_state(project)
    build = tmp_path / "build"
    env = {**os.environ, "PATH": f"{Path(interpreter).parent}:{os.environ['PATH']}", "SAM_CLI_TELEMETRY": "0"}
    done = subprocess.run(
        [str(SAM), "build", "AgentLayer", "--build-dir", str(build)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    layer = build / "AgentLayer"
    contents = sorted(str(p.relative_to(layer)) for p in layer.rglob("*") if p.is_file())
    assert contents == ["python/agent.py", "python/book.json", "python/requirements.txt"]
    assert (layer / "python" / "agent.py").read_bytes() == (project / "src" / "agent.py").read_bytes()
