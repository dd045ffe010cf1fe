"""Where the built web UI is, and its background build in a checkout.

An installed wheel carries the UI, built when the wheel was built, in the package (`stepline/webui`):
`stepline dev` serves it and needs no Node.js. An editable install of a checkout (`pip install -e`)
has no such copy; it serves the checkout's `web/dist`, and builds it in the background when it is
missing and npm is installed (`start_build`). The checkout is the folder the install record names
(`direct_url.json` of the installed distribution, which pip writes for every editable install:
PEP 610), never a path found by walking up from this module.

`STEPLINE_WEB_DIST` serves another build.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Mapping
from importlib import metadata
from importlib.resources import files
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import unquote, urlparse

from ..protocol._json import loads_strict

__all__ = [
    "BUILD_COMMAND",
    "BuildState",
    "build_state",
    "built_ui",
    "default_dist",
    "packaged_ui",
    "start_build",
    "web_sources",
]

BUILD_COMMAND = "npm ci --no-audit --no-fund --loglevel=error && npm run build"
PACKAGED_UI = "webui"
"""The UI's folder in the package (the wheel's build hook writes it; a checkout has none)."""


def packaged_ui() -> Path:
    """The package's copy of the built UI (it exists in a wheel only)."""
    return Path(str(files("stepline"))) / PACKAGED_UI


def editable_checkout(distribution: str = "stepline") -> Path | None:
    """The source folder of an editable install of `distribution` (its PEP 610 record), or None."""
    try:
        record = metadata.distribution(distribution).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not record:
        return None
    try:
        direct: dict[str, Any] = loads_strict(record)
    except ValueError:
        return None
    url = urlparse(str(direct.get("url", "")))
    if url.scheme != "file" or not direct.get("dir_info", {}).get("editable"):
        return None
    return Path(unquote(url.path))


def web_sources() -> Path | None:
    """The UI's sources (`web/` of the editable checkout), when Stepline runs from one."""
    checkout = editable_checkout()
    if checkout is None or not (checkout / "web" / "package.json").is_file():
        return None
    return checkout / "web"


def default_dist(env: Mapping[str, str]) -> Path:
    """`STEPLINE_WEB_DIST`, else the package's UI, else the checkout's `web/dist` (built or not)."""
    configured = env.get("STEPLINE_WEB_DIST", "").strip()
    if configured:
        return Path(configured)
    packaged = packaged_ui()
    sources = web_sources()
    if (packaged / "index.html").is_file() or sources is None:
        return packaged
    return sources / "dist"


def built_ui() -> Path | None:
    """The UI build there is: the package's, else the checkout's `web/dist` when built; None without one."""
    sources = web_sources()
    for dist in (packaged_ui(), None if sources is None else sources / "dist"):
        if dist is not None and (dist / "index.html").is_file():
            return dist
    return None


class BuildState:
    """What a background build of the UI is doing (read by the page served while there is no build)."""

    def __init__(self) -> None:
        self.running = False
        self.failure: str | None = None


_BUILDS: dict[Path, BuildState] = {}


def build_state(dist: Path) -> BuildState | None:
    """The background build that makes `dist`, if one was started."""
    return _BUILDS.get(dist.resolve())


def start_build(dist: Path, out: TextIO, *, web_dir: Path | None = None) -> BuildState | None:
    """Build the UI in the background when it is missing and npm is installed; None when nothing starts.

    Only the checkout's own `web/dist` is built (`web_dir`: the sources, default the checkout's).
    """
    web_dir = web_dir or web_sources()
    if web_dir is None or (dist / "index.html").is_file() or dist.resolve() != (web_dir / "dist").resolve():
        return None
    npm = shutil.which("npm")
    if npm is None or not (web_dir / "package-lock.json").is_file():
        return None
    state = BuildState()
    state.running = True
    _BUILDS[dist.resolve()] = state
    threading.Thread(target=_build, args=(web_dir, state, out), name="stepline-web-build", daemon=True).start()
    return state


def _build(web_dir: Path, state: BuildState, out: TextIO) -> None:
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
        else f"web UI build failed ({state.failure}); build it by hand: cd {web_dir} && {BUILD_COMMAND}\n"
    )
    out.flush()
