"""Run one of tests/node's scripts on a JSON scenario (its stdin) and read its JSON answer (its stdout)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.support.sdk_oracle import NODE_DIR


def run_node_script(script: str, scenario: Any, *, timeout: float = 90) -> Any:
    """`node tests/node/{script}` fed `scenario`; fails the test with its stderr when it exits non-zero."""
    done = subprocess.run(
        ["node", str(NODE_DIR / script)],
        input=json.dumps(scenario),
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
