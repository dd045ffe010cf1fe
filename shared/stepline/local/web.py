"""The web UI on the local runtime: its build (`stepline.local.ui_build` says where) served at `/`.

Static files are served as they are; any other GET outside `/api` gets `index.html`, so the UI's
own URLs (`/c/{conversationId}`) survive a reload. Paths under `/api` never fall back: the route
does not match them, so an unknown API path stays the API's JSON 404 (and a wrong method its 405).
When there is no build, `/` answers a page that says why and how to make one (and, while
`stepline dev` builds it in the background in a checkout, that it is being built).
"""

from __future__ import annotations

import html
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.responses import FileResponse, HTMLResponse
from starlette.routing import Match, Route
from starlette.types import Scope

from .ui_build import BUILD_COMMAND, build_state, web_sources

__all__ = ["describe", "mount_web"]


def _how_to_build(dist: Path) -> str:
    """What makes the missing build: the checkout's npm build, or a Stepline wheel that has one."""
    sources = web_sources()
    if sources is not None and dist.resolve() == (sources / "dist").resolve():
        return f"build it (Node.js >= 20.19): cd {sources} && {BUILD_COMMAND}"
    return "this Stepline was built without its web UI: install a wheel built with Node.js (the API works without it)"


def _missing_page(dist: Path) -> str:
    state = build_state(dist)
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
            f"{failure}<p>{html.escape(_how_to_build(dist))}; then reload this page.</p>"
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
    state = build_state(dist)
    if (dist / "index.html").is_file():
        return "served at /"
    if state is not None and state.running:
        return "building in the background (web/: npm ci && npm run build); / says when it is ready"
    return f"not built ({_how_to_build(dist)})"
