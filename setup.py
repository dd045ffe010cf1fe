"""The build hook: a wheel carries the built web UI, and never a stale copy of the template.

Everything else about the package is in pyproject.toml; setuptools runs this file for the two
commands it customises.

- `build_py` (every wheel, `pip wheel .` or `python -m build`) puts the built UI in the package as
  `stepline/webui/` (source maps left out), so `stepline dev` from an installed wheel serves it
  without Node.js. From a checkout it runs `npm ci && npm run build` in `web/` first, always: a
  release never ships whatever `web/dist` happened to be lying around. From an sdist it uses the
  build the sdist carries (so building a wheel from an sdist needs no Node.js). An editable install
  (`pip install -e`) builds nothing: it serves the checkout's `web/dist`, which `stepline dev` builds
  in the background when it is missing.
- `sdist` builds the UI the same way before it collects the files (MANIFEST.in adds `web/dist`).

Without npm the build fails, loudly: a wheel without its UI would install, start and serve a page
that says "not built" to every user of it. `STEPLINE_BUILD_WITHOUT_UI=1` builds one on purpose
(an API-only wheel); the page then says the wheel was built without it.

Both also refuse to build when `shared/stepline/stack/template.yaml` (the package's copy) differs
from the root `template.yaml` (what `sam build` deploys): the local runtime and `stepline init`
would not be the stack that is deployed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent  # setup.py is at the project root: build time only, never run time
WEB = ROOT / "web"
DIST = WEB / "dist"
NPM_BUILD = "npm ci --no-audit --no-fund --loglevel=error && npm run build"
WITHOUT_UI = "STEPLINE_BUILD_WITHOUT_UI"


class BuildError(SystemExit):
    """The build cannot make what a release needs; the message says why and what to do."""


def _check_template() -> None:
    root, packaged = ROOT / "template.yaml", ROOT / "shared" / "stepline" / "stack" / "template.yaml"
    if root.is_file() and root.read_bytes() != packaged.read_bytes():
        raise BuildError(
            "shared/stepline/stack/template.yaml differs from template.yaml (the package would not carry the "
            "stack sam build deploys): cp template.yaml shared/stepline/stack/template.yaml"
        )


def _npm_build() -> None:
    if shutil.which("npm") is None:
        raise BuildError(
            "building Stepline builds its web UI (web/: npm ci && npm run build), which needs Node.js >= 20.19 "
            f"and npm, not found on PATH. Install Node.js, or set {WITHOUT_UI}=1 to build without the UI "
            "(stepline dev then serves the API only)."
        )
    print(f"building the web UI: {NPM_BUILD} (in web/)", flush=True)
    env = {**os.environ, "npm_config_update_notifier": "false"}
    done = subprocess.run(NPM_BUILD, shell=True, cwd=WEB, env=env, check=False)  # a fixed command line
    if done.returncode != 0 or not (DIST / "index.html").is_file():
        raise BuildError(f"the web UI build failed (exit status {done.returncode}): cd web && {NPM_BUILD}")


def _ui_build() -> Path | None:
    """The built UI for this artifact: made now from the sources, or the one an sdist carries."""
    if os.environ.get(WITHOUT_UI, "") not in ("", "0"):
        print(f"{WITHOUT_UI} is set: building without the web UI", flush=True)
        return None
    from_sdist = (ROOT / "PKG-INFO").is_file()
    if not (from_sdist and (DIST / "index.html").is_file()):
        _npm_build()
    return DIST


class BuildPy(build_py):
    """Adds the built web UI to the package (not in editable installs)."""

    def run(self) -> None:
        _check_template()
        super().run()
        if self.editable_mode:
            return
        ui = _ui_build()
        if ui is None:
            return
        target = Path(self.build_lib) / "stepline" / "webui"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(ui, target, ignore=shutil.ignore_patterns("*.map"))


class Sdist(sdist):
    """Builds the web UI first, so the sdist carries it (a wheel built from the sdist needs no Node.js)."""

    def run(self) -> None:
        _check_template()
        _ui_build()
        super().run()


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
