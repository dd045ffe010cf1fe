"""Each Lambda function imports with only what its own folder and the shared layer carry.

The HTTP layer (FastAPI, Starlette, uvicorn, Mangum) is in the API functions' folders only
(`functions/api/requirements.txt`); a worker that imported it through some shared module would fail
at its first cold start on AWS, not in any test that runs the source tree with every extra
installed. Each function's `app` is imported in a fresh process with those packages made
unimportable unless its folder asks for them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FUNCTIONS = Path(__file__).resolve().parents[3] / "shared" / "stepline" / "stack" / "functions"
HTTP_LAYER = ("fastapi", "starlette", "uvicorn", "mangum")
WORKERS = sorted(
    p.name for p in FUNCTIONS.iterdir() if (p / "app.py").exists() and not (p / "requirements.txt").exists()
)

_IMPORT = f"""
import importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {HTTP_LAYER!r}:
            raise ImportError(f"{{name}} is not in this function's folder")
sys.meta_path.insert(0, Absent())
sys.path.insert(0, ".")
import app
assert callable(app.handler)
"""


def test_the_workers_are_every_function_but_the_api() -> None:
    assert "model_step" in WORKERS and "schedule_dispatch" in WORKERS and "api" not in WORKERS


@pytest.mark.parametrize("function", WORKERS)
def test_a_worker_function_imports_without_the_http_layer(function: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT], cwd=FUNCTIONS / function, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
