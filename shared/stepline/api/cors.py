"""Cross-origin calls: which browser origins may call the API (a front end served from elsewhere).

Off by default: the bundled web UI is served from the API's own origin. `STEPLINE_CORS_ORIGINS`
lists the others, comma-separated, each `scheme://host[:port]` exactly as the browser sends it in
`Origin` (or `*`, any origin). Users authenticate with a bearer token, never a cookie, so no
credentials are allowed; the stream's protocol header is exposed to the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["install_cors", "parse_origins"]

_MAX_AGE_SECONDS = 600


def parse_origins(text: str) -> tuple[str, ...]:
    """The origins of a comma-separated list; a `ValueError` names the first one that is not an origin."""
    origins: list[str] = []
    for raw in text.split(","):
        origin = raw.strip()
        if not origin:
            continue
        if origin != "*":
            parts = urlsplit(origin)
            if (
                parts.scheme not in ("http", "https")
                or not parts.hostname
                or origin != f"{parts.scheme}://{parts.netloc}"
            ):
                raise ValueError(
                    f"{origin!r} is not an origin: write scheme://host[:port] (no path, no trailing slash), or *"
                )
        if origin not in origins:
            origins.append(origin)
    return tuple(origins)


def install_cors(app: FastAPI, origins: tuple[str, ...]) -> None:
    """Answer preflights and mark responses for `origins` (nothing when there are none)."""
    if not origins:
        return
    from starlette.middleware.cors import CORSMiddleware

    app.add_middleware(
        CORSMiddleware,
        allow_origins=list(origins),
        allow_methods=["GET", "POST", "DELETE"],
        allow_headers=["*"],
        allow_credentials=False,
        expose_headers=["x-vercel-ai-ui-message-stream"],
        max_age=_MAX_AGE_SECONDS,
    )
