"""A long-lived Node process running the real `ai` package (tests/node/oracle.mjs).

Tests send it the same inputs they give Stepline and compare the answers. One process serves the
whole session; requests are JSON lines.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

NODE_DIR = Path(__file__).resolve().parents[1] / "node"


class SdkError(Exception):
    """The SDK threw: `name` and `message` are the JavaScript error's."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('name')}: {error.get('message')}")
        self.name = error.get("name")
        self.detail = error


class SdkOracle:
    def __init__(self) -> None:
        node = shutil.which("node")
        if node is None or not (NODE_DIR / "node_modules" / "ai").exists():
            raise RuntimeError("the AI SDK oracle needs node and `npm ci` in tests/node (the install step does this)")
        self._process = subprocess.Popen(
            [node, str(NODE_DIR / "oracle.mjs")],
            cwd=NODE_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._lock = threading.Lock()
        self._next_id = 0

    def call(self, op: str, **payload: Any) -> Any:
        assert self._process.stdin is not None and self._process.stdout is not None
        with self._lock:
            self._next_id += 1
            request = {"id": self._next_id, "op": op, **payload}
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        if not line:
            raise RuntimeError("the AI SDK oracle exited")
        answer = json.loads(line)
        assert answer["id"] == request["id"]
        if not answer["ok"]:
            raise SdkError(answer["error"])
        return answer["result"]

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=10)
        if self._process.stdout is not None:
            self._process.stdout.close()
