"""A local OpenID provider (tests/node/oidc_server.mjs: the `oidc-provider` package) in a subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "node" / "oidc_server.mjs"
CLIENT_ID = "stepline-ui"


@contextmanager
def oidc_provider(origin: str, *, client_id: str = CLIENT_ID, ttl_seconds: int = 600) -> Generator[str]:
    """The provider's issuer URL; its one client redirects to `origin` + `/`."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("the sign-in tests need Node.js (node on PATH) to run the local OpenID provider")
    args = [node, str(SCRIPT), "--origin", origin, "--client-id", client_id, "--ttl", str(ttl_seconds)]
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()  # blocks until it listens, or EOF if it died
            if not line:
                raise RuntimeError(f"the OpenID provider did not start (exit {process.wait(10)})")
            yield str(json.loads(line)["issuer"])
        finally:
            process.terminate()
