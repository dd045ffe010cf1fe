"""The code stays ruff-clean and pyright-strict-clean, and the pure core stays pure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYRIGHT = ROOT / "tests" / "node" / "node_modules" / ".bin" / "pyright"


def run(*command: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_check_is_clean() -> None:
    result = run(sys.executable, "-m", "ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean() -> None:
    result = run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(not PYRIGHT.exists(), reason="pyright is installed by .ci/install (npm ci in tests/node)")
def test_pyright_strict_is_clean() -> None:
    result = run(PYRIGHT, "--pythonpath", sys.executable)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr


PURE_CORE = [
    "stepline.protocol",
    *(f"stepline.protocol.{p.stem}" for p in (ROOT / "shared/stepline/protocol").glob("*.py")),
]
ALLOWED_THIRD_PARTY = {
    "pydantic",
    "pydantic_core",
    "typing_extensions",
    "annotated_types",
    "typing_inspection",
    "stepline",
}


def test_the_pure_core_imports_only_the_standard_library_and_pydantic() -> None:
    code = (
        "import sys, importlib\n"
        "before = set(sys.modules)\n"
        f"for name in {PURE_CORE!r}: importlib.import_module(name)\n"
        "loaded = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "print(sorted(m for m in loaded - set(sys.stdlib_module_names) if not m.startswith('_sysconfigdata')))\n"
    )
    result = run(sys.executable, "-c", code)
    assert result.returncode == 0, result.stderr
    third_party = set(eval(result.stdout))  # a printed list of names
    assert third_party <= ALLOWED_THIRD_PARTY
    assert {"boto3", "openai", "anthropic", "fastapi", "httpx"}.isdisjoint(third_party)
