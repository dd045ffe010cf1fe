"""The API folder's two entry points import what their function serves, and no more.

`ApiFunction` imports `app.py` (the whole API through Mangum); `StreamFunction`'s `run.sh` serves
`stream:app` under uvicorn, which has only the four streaming routes template.yaml sends it and the
health check the Lambda Web Adapter polls (`stepline.api.stream_app`), and loads no other route
module. Neither loads Powertools (the workers' logs and metrics). Each is imported in a fresh
process from the function's folder, with the environment template.yaml gives it (no AWS call is
made: the services only build their clients). See docs/architecture.md, "Cold start and SnapStart".
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.unit.infra.test_template import Template

FUNCTIONS = Path(__file__).resolve().parents[3] / "shared" / "stepline" / "stack" / "functions"

# The route modules the stream function does not serve (template.yaml sends it the four streaming
# routes; the Web Adapter polls /api/health): importing any of them is a cold-start cost it never uses.
NOT_IN_THE_STREAM = tuple(
    f"stepline.api.{name}"
    for name in ("app", "resources", "agents", "approval_links", "inspect", "runs", "forks", "hooks", "usage")
)
POWERTOOLS = "aws_lambda_powertools"  # the workers' logs and metrics
HEALTH = ("/api/health", "GET")  # the Web Adapter's readiness check, not an API Gateway route


def _route(path: str, method: str) -> tuple[str, str]:
    return re.sub(r"\{\w+\}", "{}", path), method.upper()  # `{id}` in the template is `{chat_id}` in the app


def _streamed(source: Template) -> set[tuple[str, str]]:
    """The routes template.yaml sends to the stream function, and the health check."""
    events = source["Resources"]["StreamFunction"]["Properties"]["Events"]
    return {_route(e["Properties"]["Path"], e["Properties"]["Method"]) for e in events.values()} | {HEALTH}


_API_IMPORT = """
import importlib, json, sys
sys.path.insert(0, ".")
module = importlib.import_module(sys.argv[1])
modules = sorted(sys.modules)  # before the OpenAPI document is built
routes = sorted([path, method.upper()] for path, ops in module.app.openapi()["paths"].items() for method in ops)
print(json.dumps({"modules": modules, "routes": routes}))
"""
_API_ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "function-imports",
    "AWS_SECRET_ACCESS_KEY": "function-imports",
    "STEPLINE_AGENT_TABLE": "stepline-agent",
    "STEPLINE_EVENTS_TABLE": "stepline-events",
    "STEPLINE_BUCKET": "stepline-bucket",
    "STEPLINE_EVENT_BUS": "stepline-bus",
    "STEPLINE_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:stepline-agent-run",
}


def _api_entry(module: str) -> dict[str, list[str]]:
    """What importing the API folder's `module` (as its function does) loads, and the routes its app serves."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPLINE_", "AWS_"))} | _API_ENV
    result = subprocess.run(
        [sys.executable, "-c", _API_IMPORT, module],
        cwd=FUNCTIONS / "api",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_stream_function_runs_the_stream_module() -> None:
    script = (FUNCTIONS / "api" / "run.sh").read_text()
    served = re.findall(r"uvicorn .* (\w+):app\s*$", script, re.MULTILINE)
    assert served == ["stream"], script
    assert (FUNCTIONS / "api" / "stream.py").is_file()


def test_the_stream_app_serves_its_routes_only_and_loads_no_other_route_module(source: Template) -> None:
    stream, whole = _api_entry("stream"), _api_entry("app")
    streamed = _streamed(source)
    assert len(streamed) == 5  # the four streaming routes and the health check
    assert {_route(*route) for route in stream["routes"]} == streamed
    assert {_route(*route) for route in whole["routes"]} > streamed  # the buffered function serves them all
    loaded = [m for m in stream["modules"] if m in NOT_IN_THE_STREAM]
    assert loaded == [], "the stream function imports route modules it does not serve"
    assert set(NOT_IN_THE_STREAM) <= set(whole["modules"]), "the check would pass vacuously"
    for entry in (stream, whole):
        assert [m for m in entry["modules"] if m.split(".")[0] == POWERTOOLS] == [], "Powertools in an API function"
