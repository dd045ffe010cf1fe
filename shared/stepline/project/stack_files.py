"""A project's `stack/`: the parts of Stepline's stack its template.yaml builds from, for this release.

    stack/functions/<name>/           the Lambda entry points (the package's `stepline/stack/functions`)
    stack/statemachine/               the agent-run state machine
    stack/web/                        the built web UI (the package's, or a checkout's `web/dist`)
    stack/layer/requirements.txt      the shared layer: this Stepline release, installed by `sam build`
    stack/Makefile                    how `sam build` builds the layer and the functions (with bytecode)

Everything comes from the installed package, so a project written from a wheel deploys the release
it runs locally. The shared layer installs `stepline[lambda]==<this version>` from the package index
(pip's `--find-links`, such as `PIP_FIND_LINKS=/path/to/wheels`, serves a wheel of your own).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path

from .. import __version__
from ..errors import StepLineError
from ..local.ui_build import BUILD_COMMAND, built_ui
from ..stack import ASL, FUNCTIONS, MAKEFILE
from .template import STACK_FOLDER

__all__ = ["MissingUiError", "StackFile", "layer_requirements", "stack_files"]

_SKIPPED = ("__pycache__", ".pyc", ".map")


@dataclass(frozen=True, slots=True)
class StackFile:
    """One file to write: its bytes, and whether it is executable (the stream function's run.sh)."""

    data: bytes
    executable: bool = False


def layer_requirements(version: str = __version__) -> str:
    """The shared layer's requirements.txt: Stepline at this version, with what its functions import."""
    return (
        "# Stepline's shared layer (`sam build` installs it for arm64): the stepline package at the version\n"
        "# this project's stack/ was written for, with what the functions import beyond the Lambda runtime\n"
        "# (boto3). Write stack/ again after upgrading: stepline init . --template-only\n"
        f"stepline[lambda]=={version}\n"
    )


def _tree(root: Traversable, prefix: str) -> dict[str, StackFile]:
    found: dict[str, StackFile] = {}
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(_SKIPPED):
            continue
        if entry.is_dir():
            found |= _tree(entry, f"{prefix}{entry.name}/")
        else:
            executable = isinstance(entry, Path) and os.access(entry, os.X_OK)
            found[prefix + entry.name] = StackFile(entry.read_bytes(), executable)
    return found


class MissingUiError(StepLineError):
    """There is no built web UI to deploy (a checkout whose `web/` was not built)."""


def stack_files(version: str = __version__) -> dict[str, StackFile]:
    """The files of `stack/`, by path relative to the project.

    Raises:
        MissingUiError: Stepline runs from a checkout whose web UI is not built.
    """
    ui = built_ui()
    if ui is None:
        raise MissingUiError(f"the web UI is not built, and the project deploys it: {BUILD_COMMAND} (in web/)")
    files = _tree(FUNCTIONS, "functions/") | _tree(ui, "web/")
    files["statemachine/agent_run.asl.json"] = StackFile(ASL.read_bytes())
    files["Makefile"] = StackFile(MAKEFILE.read_bytes())  # the makefile builds' (ContextPath stack/)
    files["layer/requirements.txt"] = StackFile(layer_requirements(version).encode())
    return {STACK_FOLDER + path: file for path, file in files.items()}
