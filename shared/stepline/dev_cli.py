"""`stepline dev`'s command line; the server's code is imported only when the command runs.

stepline dev [--host H] [--port P] [--data DIR | --memory | --aws] [--agent MODULE:ATTR]
[--reload] [--log-level LEVEL]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from .local.dev_defaults import DEFAULT_DATA_DIR, DEFAULT_HOST, DEFAULT_LOG_LEVEL, DEFAULT_PORT, LOG_LEVELS

__all__ = ["add_dev_parser"]


def add_dev_parser(commands: Any) -> None:
    """Register `stepline dev` on the top-level subcommand parser."""
    dev = commands.add_parser(
        "dev",
        help="serve Stepline on this machine: the API, the web UI and the state machine, in one process",
        description="Serve Stepline on this machine: the API, the web UI and the agent-run state machine in one "
        "process, with the state kept in a data folder (conversations, runs and waiting approvals survive a "
        "restart; unfinished runs go on when it starts again).",
    )
    dev.add_argument("--host", default=DEFAULT_HOST, help="interface to listen on (default %(default)s)")
    dev.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="port to listen on (default %(default)s; 0: any free port)"
    )
    storage = dev.add_mutually_exclusive_group()
    storage.add_argument(
        "--data", metavar="DIR", default=DEFAULT_DATA_DIR, help="keep the state in this folder (default %(default)s)"
    )
    storage.add_argument(
        "--memory",
        action="store_true",
        help="keep nothing: DynamoDB and S3 on moto in memory, gone when the server stops",
    )
    storage.add_argument(
        "--aws", action="store_true", help="serve the API over a deployed stack (its STEPLINE_* variables)"
    )
    dev.add_argument(
        "--agent",
        metavar="MODULE:ATTR",
        help="the agent to serve, importable from the working directory (default: $STEPLINE_AGENT, else the "
        "default agent)",
    )
    dev.add_argument(
        "--reload",
        action="store_true",
        help="restart the server when the agent's files change (.py, .json, .toml, .yaml in the working "
        "directory and the agent's package)",
    )
    dev.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default=DEFAULT_LOG_LEVEL,
        help="what uvicorn and Stepline log (default %(default)s; info adds the access log)",
    )
    dev.add_argument("--listener-fd", type=int, help=argparse.SUPPRESS)  # --reload's socket, for its server process
    dev.set_defaults(handler=_dev)


def _dev(args: argparse.Namespace, out: TextIO) -> None:
    from .local.serving import ServeOptions, serve

    options = ServeOptions(
        host=args.host,
        port=args.port,
        aws=args.aws,
        data_dir=None if args.memory else Path(args.data),
        agent=args.agent,
        log_level=args.log_level,
        listener_fd=args.listener_fd,
    )
    if args.reload:
        from .local.reload import supervise

        supervise(options, out)
        return
    serve(options, out)
