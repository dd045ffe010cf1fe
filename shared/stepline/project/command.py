"""`stepline init`'s command line; the project's code is imported only when the command runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from ..errors import StepLineError

__all__ = ["add_init_parser"]


def add_init_parser(commands: Any) -> None:
    """Register `stepline init` on the top-level subcommand parser."""
    init = commands.add_parser("init", help="scaffold a project with your own agent")
    init.add_argument("directory", type=Path, help="where to create the project (created if missing)")
    init.add_argument("--force", action="store_true", help="overwrite files that already exist")
    init.add_argument(
        "--template-only",
        action="store_true",
        help="only write the deployment again (template.yaml and stack/), after upgrading Stepline",
    )
    init.set_defaults(handler=_init)


def _init(args: argparse.Namespace, out: TextIO) -> None:
    try:
        from .scaffold import AGENT_REFERENCE, init_project  # PyYAML (the local extra) only for this command
    except ModuleNotFoundError as error:
        raise StepLineError(
            f"stepline init needs the local extra (no module {error.name}): pip install 'stepline[local]'"
        ) from None

    scaffold = init_project(args.directory, force=args.force, template_only=args.template_only)
    out.write(f"Wrote {', '.join(scaffold.written)} in {scaffold.directory}\n")
    if not args.template_only:
        out.write(
            f"Next: cd {scaffold.directory} && pip install -e '.[dev]' (README.md), then\n"
            f"  STEPLINE_AGENT={AGENT_REFERENCE} stepline dev     # run it locally\n"
            "  python -m pytest                           # test it\n"
        )
