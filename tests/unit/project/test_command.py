"""`stepline init` on the command line: what it writes, what it refuses, what it needs."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from stepline.cli import main


def test_init_writes_the_project_and_says_the_two_commands(tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["init", str(tmp_path / "demo")], out=out) == 0
    assert (tmp_path / "demo" / "src" / "agent.py").is_file() and (tmp_path / "demo" / "template.yaml").is_file()
    assert "Skipped" not in out.getvalue()
    assert "STEPLINE_AGENT=agent:agent stepline dev" in out.getvalue()


def test_init_refuses_to_overwrite_naming_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "agent.py").write_text("# mine\n")
    assert main(["init", str(tmp_path)], out=io.StringIO()) == 2
    assert "src/agent.py already exist" in capsys.readouterr().err
    assert (tmp_path / "src" / "agent.py").read_text() == "# mine\n"
    assert not (tmp_path / "template.yaml").exists()  # nothing written


def test_without_pyyaml_init_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in (
        "stepline.project.scaffold",
        "stepline.project.template",
        "stepline.project.stack_files",
        "stepline.stack.cfn_yaml",
    ):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setitem(sys.modules, "yaml", None)  # type: ignore[arg-type]
    assert main(["init", str(tmp_path / "x")], out=io.StringIO()) == 2
    assert "pip install 'stepline[local]'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
