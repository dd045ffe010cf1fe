"""Each Lambda function imports with only what its own folder and the shared layer carry.

The HTTP layer (FastAPI, Starlette, uvicorn, Mangum) is in the API functions' folders only
(`functions/api/requirements.txt`); a worker that imported it through some shared module would fail
at its first cold start on AWS, not in any test that runs the source tree with every extra
installed. Each function's `app` is imported in a fresh process with those packages made
unimportable unless its folder asks for them.

The same import pins what a worker's cold start does not load or build (docs/architecture.md,
"Cold start and SnapStart"): no provider SDK (the model is built at init or on first call, not at
import), no tracing SDK with tracing off, none of the HTTP side's protocol modules (the chat
request, the stream writer), and no pydantic validator of a wire model or store record (they are
built on first use, `defer_build`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FUNCTIONS = Path(__file__).resolve().parents[3] / "shared" / "stepline" / "stack" / "functions"
HTTP_LAYER = ("fastapi", "starlette", "uvicorn", "mangum")
NOT_AT_IMPORT = (
    *("openai", "anthropic", "httpx", "aws_xray_sdk", "opentelemetry"),
    *("stepline.api", "stepline.protocol.request", "stepline.protocol.writer"),
)
WORKERS = sorted(
    p.name for p in FUNCTIONS.iterdir() if (p / "app.py").exists() and not (p / "requirements.txt").exists()
)

_IMPORT = f"""
import importlib.abc, json, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {HTTP_LAYER!r}:
            raise ImportError(f"{{name}} is not in this function's folder")
sys.meta_path.insert(0, Absent())
sys.path.insert(0, ".")
import app
assert callable(app.handler)
from stepline.protocol._base import WireModel
from stepline.store.records import ConversationRecord

def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)

models = [*subclasses(WireModel), *subclasses(ConversationRecord.__base__)]  # the records' common base
loaded = sorted(m for m in sys.modules if any(m == n or m.startswith(n + ".") for n in {NOT_AT_IMPORT!r}))
built = sorted(f"{{m.__module__}}.{{m.__qualname__}}" for m in models if m.__pydantic_complete__)
print(json.dumps({{"models": len(models), "loaded": loaded, "built": built}}))
"""


def test_the_workers_are_every_function_but_the_api() -> None:
    assert "model_step" in WORKERS and "schedule_dispatch" in WORKERS and "api" not in WORKERS


@pytest.mark.parametrize("function", WORKERS)
def test_a_worker_function_imports_without_the_http_layer(function: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT], cwd=FUNCTIONS / function, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize("function", WORKERS)
def test_a_worker_function_loads_no_sdk_nor_http_protocol_and_builds_no_wire_model_at_import(function: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT], cwd=FUNCTIONS / function, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["models"] > 50, "the wire models and records were not found: the check would pass vacuously"
    assert found["loaded"] == [], f"{function} imports what its cold start does not need"
    assert found["built"] == [], f"{function} builds these models' validators at import (defer_build)"
