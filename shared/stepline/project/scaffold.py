"""`stepline init DIR`: a project of your own, with an agent, its tests, and how to run and deploy it.

    stepline init my-agent
    cd my-agent && pip install -e ".[dev]" && python -m pytest
    STEPLINE_AGENT=agent:agent stepline dev

Writes pyproject.toml, src/agent.py, src/book.json (the script book the agent plays locally without a
model), src/requirements.txt (the agent layer's own dependencies), tests/test_agent.py, README.md,
.gitignore, template.yaml (`stepline.project.template`) and stack/ (`stepline.project.stack_files`),
all from the installed package. An existing file is never overwritten without `--force`;
`--template-only` writes template.yaml and stack/ again (after upgrading Stepline).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..errors import StepLineError
from ..protocol._json import dumps
from . import files
from .stack_files import StackFile, stack_files
from .template import AGENT_SOURCE, STACK_FOLDER, dump_template, project_template

__all__ = ["AGENT_REFERENCE", "InitError", "Scaffold", "init_project"]

AGENT_REFERENCE = "agent:agent"


class InitError(StepLineError):
    """The project cannot be written as asked (files in the way)."""


@dataclass(frozen=True, slots=True)
class Scaffold:
    """What `init_project` wrote: the project's files, and `stack/` (written whole, counted as one)."""

    directory: Path
    written: list[str]


def _slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not slug or not slug[0].isalpha():
        slug = f"agent-{slug}".strip("-")
    return slug[:64]


def _deployment(name: str) -> dict[str, StackFile]:
    template = dump_template(project_template(agent=AGENT_REFERENCE, name=name))
    return {"template.yaml": StackFile(template.encode())} | stack_files()


def _contents(directory: Path) -> dict[str, StackFile]:
    name = directory.name or "agent"
    values = {"name": name, "slug": _slug(name), "version": __version__}
    texts = {
        "pyproject.toml": files.render(files.PYPROJECT, **values),
        f"{AGENT_SOURCE}agent.py": files.render(files.AGENT_PY, **values),
        f"{AGENT_SOURCE}book.json": dumps(files.book(name)) + "\n",
        f"{AGENT_SOURCE}requirements.txt": files.REQUIREMENTS,
        "tests/test_agent.py": files.render(files.TEST_AGENT_PY, **values),
        "README.md": files.render(files.README, **values),
        ".gitignore": files.GITIGNORE,
    }
    return {path: StackFile(text.encode()) for path, text in texts.items()} | _deployment(name)


def init_project(directory: Path, *, force: bool = False, template_only: bool = False) -> Scaffold:
    """Write the project into `directory` (created if missing).

    Raises:
        InitError: a file exists (without `force`).
        MissingUiError: Stepline runs from a checkout whose web UI is not built.
    """
    name = directory.resolve().name or "agent"
    contents = _deployment(name) if template_only else _contents(directory.resolve())
    ours = [p for p in contents if not p.startswith(STACK_FOLDER)]
    existing = sorted(p for p in [*ours, STACK_FOLDER] if (directory / p).exists())
    if existing and not (force or template_only):
        raise InitError(f"{directory}: {', '.join(existing)} already exist (--force overwrites them)")
    shutil.rmtree(directory / STACK_FOLDER, ignore_errors=True)  # Stepline's folder: written whole, never merged
    for relative, file in contents.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(file.data)
        if file.executable:
            path.chmod(path.stat().st_mode | 0o111)
    return Scaffold(directory, [*ours, STACK_FOLDER])
