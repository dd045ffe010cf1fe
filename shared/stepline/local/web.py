"""The web UI on the local runtime: `web/dist` (the Vite build of `web/`) served at `/`.

Static files are served as they are; any other GET outside `/api` gets `index.html`, so the UI's
own URLs (`/c/{conversationId}`) survive a reload. Paths under `/api` never fall back: the route
does not match them, so an unknown API path stays the API's JSON 404 (and a wrong method its 405).
When there is no build yet, `/` answers a page that says how to make one (and, while `stepline
dev` builds it in the background, that it is being built).

`stepline dev` builds the UI on its first start when `web/dist` is missing and npm is installed
(`start_build`); without Node.js the API works as before and the banner says how to get the UI.
"""

from __future__ import annotations

import html
import os
import shutil
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from fastapi import FastAPI, Request, Response
from fastapi.responses import FileResponse, HTMLResponse
from starlette.routing import Match, Route
from starlette.types import Scope

__all__ = ["WEB_DIR", "BuildState", "default_dist", "describe", "mount_web", "start_build"]

WEB_DIR = Path(__file__).resolve().parents[3] / "web"
"""The UI's sources in a checkout of the repository (an editable install)."""

BUILD_COMMAND = "npm ci --no-audit --no-fund --loglevel=error && npm run build"


def default_dist(env: Mapping[str, str]) -> Path:
    """`STEPLINE_WEB_DIST`, else `web/dist` of the checkout."""
    configured = env.get("STEPLINE_WEB_DIST", "").strip()
    return Path(configured) if configured else WEB_DIR / "dist"


class BuildState:
    """What a background build of the UI is doing (read by the page served while there is no build)."""

    def __init__(self) -> None:
        self.running = False
        self.failure: str | None = None


_BUILDS: dict[Path, BuildState] = {}


def _missing_page(dist: Path) -> str:
    state = _BUILDS.get(dist.resolve())
    if state is not None and state.running:
        status = (
            "<p><strong>The web UI is being built</strong> (<code>npm ci &amp;&amp; npm run build</code> in "
            "<code>web/</code>); this page reloads itself when it is ready.</p>"
            "<script>setTimeout(function () { location.reload(); }, 3000);</script>"
        )
    else:
        failure = (
            ""
            if state is None or state.failure is None
            else f"<p>The last build failed: {html.escape(state.failure)}</p>"
        )
        status = (
            f"<p><strong>The web UI is not built.</strong> There is no <code>{html.escape(str(dist))}</code>.</p>"
            f"{failure}"
            "<p>Build it (Node.js &ge; 20.19): <code>cd web &amp;&amp; npm ci &amp;&amp; npm run build</code>, "
            "or run <code>bash .ci/install</code>; then reload this page.</p>"
        )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Stepline</title>"
        '<meta name=viewport content="width=device-width, initial-scale=1"></head>'
        '<body style="font-family: system-ui, sans-serif; max-width: 42rem; margin: 3rem auto; padding: 0 1rem">'
        f"<h1>Stepline</h1>{status}"
        '<p>The API is up: <a href="/api/docs">/api/docs</a>.</p></body></html>'
    )


class _WebRoute(Route):
    """A catch-all GET route that never matches under `/api` (API paths keep their own 404 and 405)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path = str(scope.get("path", ""))
        if path == "/api" or path.startswith("/api/"):
            return Match.NONE, {}
        return super().matches(scope)


def mount_web(app: FastAPI, dist: Path) -> None:
    """Serve the UI build in `dist` at `/`, after every route already registered."""
    root = dist.resolve()

    def web(request: Request) -> Response:
        path = str(request.path_params.get("path", ""))
        index = root / "index.html"
        if not index.is_file():
            return HTMLResponse(_missing_page(root), status_code=503, headers={"cache-control": "no-store"})
        if path:
            candidate = (root / path).resolve()
            if candidate.is_relative_to(root) and candidate.is_file():
                immutable = candidate.parent.name == "assets"  # Vite's content-hashed file names
                cache = "public, max-age=31536000, immutable" if immutable else "no-cache"
                return FileResponse(candidate, headers={"cache-control": cache})
        return FileResponse(index, headers={"cache-control": "no-cache"})

    app.router.routes.append(_WebRoute("/{path:path}", web, methods=["GET", "HEAD"], include_in_schema=False))


def describe(dist: Path) -> str:
    """The banner's line about the UI."""
    state = _BUILDS.get(dist.resolve())
    if (dist / "index.html").is_file():
        return "served at /"
    if state is not None and state.running:
        return "building in the background (web/: npm ci && npm run build); / says when it is ready"
    return "not built (Node.js >= 20.19: `cd web && npm ci && npm run build`); the API works without it"


def start_build(dist: Path, out: TextIO, *, web_dir: Path = WEB_DIR) -> BuildState | None:
    """Build the UI in the background when it is missing and npm is installed; None when nothing starts."""
    if (dist / "index.html").is_file() or dist.resolve() != (web_dir / "dist").resolve():
        return None
    npm = shutil.which("npm")
    if npm is None or not (web_dir / "package-lock.json").is_file():
        return None
    state = BuildState()
    state.running = True
    _BUILDS[dist.resolve()] = state

    def build() -> None:
        try:
            done = subprocess.run(  # a fixed command line, no user input
                BUILD_COMMAND,
                shell=True,
                cwd=web_dir,
                capture_output=True,
                text=True,
                env={**os.environ, "npm_config_update_notifier": "false"},
                check=False,
            )
        except OSError as error:
            state.failure = str(error)
        else:
            if done.returncode != 0:
                state.failure = f"exit status {done.returncode}: {(done.stderr or done.stdout).strip()[-600:]}"
        state.running = False
        out.write(
            "web UI built: reload the page\n"
            if state.failure is None
            else f"web UI build failed ({state.failure}); build it by hand: cd web && {BUILD_COMMAND}\n"
        )
        out.flush()

    threading.Thread(target=build, name="stepline-web-build", daemon=True).start()
    return state
