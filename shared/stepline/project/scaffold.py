"""`stepline init DIR`: a project of your own, with an agent, its tests, and how to run and deploy it.

    stepline init my-agent
    cd my-agent && pip install -e "<stepline>[local]" -e ".[dev]" && python -m pytest
    STEPLINE_AGENT=agent:agent stepline dev

Writes pyproject.toml, agent.py, tests/test_agent.py, book.json (the script book the agent plays
locally without a model), requirements.txt (the agent layer's own dependencies), template.yaml
(`stepline.project.template`), README.md and .gitignore. An existing file is never overwritten
without `--force`; `--template-only` writes template.yaml again (after upgrading Stepline).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import StepLineError
from ..protocol._json import dumps
from . import files
from .template import dump_template, project_template, stepline_root

__all__ = ["AGENT_REFERENCE", "InitError", "Scaffold", "init_project"]

AGENT_REFERENCE = "agent:agent"


class InitError(StepLineError):
    """The project cannot be written as asked (files in the way, no Stepline checkout for the template)."""


@dataclass(frozen=True, slots=True)
class Scaffold:
    """What `init_project` wrote, and what it left out (with why)."""

    directory: Path
    written: list[str]
    skipped: list[str]


def _slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not slug or not slug[0].isalpha():
        slug = f"agent-{slug}".strip("-")
    return slug[:64]


def _contents(directory: Path, root: Path | None) -> dict[str, str]:
    name = directory.name or "agent"
    slug = _slug(name)
    install = str(root) if root is not None else "<path-to-stepline>"
    values = {"name": name, "slug": slug, "stepline_install": install, "stepline_path": install}
    contents = {
        "pyproject.toml": files.render(files.PYPROJECT, **values),
        "agent.py": files.render(files.AGENT_PY, **values),
        "tests/test_agent.py": files.render(files.TEST_AGENT_PY, **values),
        "book.json": dumps(files.book(name)) + "\n",
        "requirements.txt": files.REQUIREMENTS,
        "README.md": files.render(files.README, **values),
        ".gitignore": files.GITIGNORE,
    }
    if root is not None:
        contents["template.yaml"] = dump_template(
            project_template(root, directory.resolve(), agent=AGENT_REFERENCE, name=name)
        )
    return contents


def init_project(
    directory: Path, *, force: bool = False, template_only: bool = False, stepline: Path | None = None
) -> Scaffold:
    """Write the project into `directory` (created if missing).

    `stepline` is the Stepline checkout whose template.yaml the project's is derived from
    (default: the one this package runs from).

    Raises:
        InitError: a file exists (without `force`), or the template was asked for and there is
            no Stepline checkout to derive it from.
    """
    root = stepline.resolve() if stepline is not None else stepline_root()
    if root is not None and not (root / "template.yaml").is_file():
        raise InitError(f"--stepline {root}: no template.yaml there (give the root of a Stepline checkout)")
    if template_only and root is None:
        raise InitError("no Stepline checkout to write template.yaml from: pass --stepline PATH")
    contents = _contents(directory, root)
    if template_only:
        contents = {"template.yaml": contents["template.yaml"]}
        force = True
    existing = sorted(p for p in contents if (directory / p).exists())
    if existing and not force:
        raise InitError(f"{directory}: {', '.join(existing)} already exist (--force overwrites them)")
    for relative, text in contents.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    skipped = (
        []
        if root is not None
        else ["template.yaml (stepline runs from a wheel, not a checkout: pass --stepline PATH to a checkout)"]
    )
    return Scaffold(directory, list(contents), skipped)
