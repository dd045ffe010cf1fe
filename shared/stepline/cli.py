"""The `stepline` command.

    stepline protocol reduce [FILE] [--sse] [--message START.json]
        A JSON array of UI message chunks (or, with --sse, an SSE body) → the final UIMessage as
        JSON (`null` when the stream yields no message). --message continues an existing
        assistant message.
    stepline protocol convert [FILE] [--ignore-incomplete-tool-calls]
        A JSON array of UIMessages → the model messages as JSON.
    stepline run [--agent MODULE:ATTR] [--model M] [--tools MODULE] [--sse] [--approve|--deny] PROMPT
        One agent turn in this process (see `run_cli`).
    stepline dev [--host H] [--port P] [--data DIR | --memory | --aws] [--agent MODULE:ATTR] [--reload]
                 [--log-level LEVEL]
        The API, the web UI and the durable runtime on this machine (see `stepline.dev_cli`); its
        state is kept in DIR (default .stepline/), or in memory only with --memory.
    stepline runs list [--data DIR] | stepline runs show RUN_ID [--data DIR | --url URL --token T] [--json]
        The run inspector in the terminal (see `runs_cli`).
    stepline init DIR [--force] [--template-only]
        A project of your own: an agent, its tests, its stack (see `stepline.project.scaffold`).
    stepline --version

FILE absent or `-` reads standard input. Invalid input or a protocol violation prints what was
wrong on standard error and exits non-zero (2 for unreadable input, 1 for a protocol violation).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from pydantic import TypeAdapter, ValidationError

from . import __version__
from .dev_cli import add_dev_parser
from .errors import InvalidUIMessageError, MessageConversionError, ProtocolError, StepLineError
from .project.command import add_init_parser
from .protocol._base import DEFERRED
from .protocol._json import dumps, loads_strict
from .protocol.chunks import UIMessageChunk
from .protocol.convert_json import convert_ui_messages_json
from .protocol.parts import UIMessage
from .protocol.reducer import reduce_ui_message_stream
from .protocol.sse import decode_ui_message_stream
from .run_cli import add_run_parser
from .runs_cli import add_runs_parser

__all__ = ["main"]

_CHUNKS: TypeAdapter[list[UIMessageChunk]] = TypeAdapter(list[UIMessageChunk], config=DEFERRED)


class CliError(Exception):
    """A problem to report on stderr, with the exit status to use."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def _read(path: str | None) -> str:
    if path is None or path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror}") from error


def _json(text: str, what: str) -> Any:
    try:
        return loads_strict(text)
    except ValueError as error:
        raise CliError(f"{what} is not valid JSON: {error}") from error


def _describe(error: ValidationError, root: str) -> str:
    issue = error.errors()[0]
    path = root
    previous: object = None
    for part in issue["loc"]:
        if isinstance(part, int):
            path += f"[{part}]"
        elif not isinstance(previous, int):  # right after a list index comes the union tag: not a field
            path += f".{part}"
        previous = part
    return f"{path}: {issue['msg']}"


def _reduce(args: argparse.Namespace, out: TextIO) -> None:
    text = _read(args.file)
    if args.sse:
        try:
            chunks = decode_ui_message_stream(text)
        except ProtocolError as error:
            raise CliError(f"invalid SSE body: {error}") from error
    else:
        try:
            chunks = _CHUNKS.validate_python(_json(text, "the chunk array"))
        except ValidationError as error:
            raise CliError(f"invalid chunk: {_describe(error, 'chunks')}") from error
    start = None
    if args.message is not None:
        try:
            start = UIMessage.model_validate(_json(_read(args.message), "--message"))
        except ValidationError as error:
            raise CliError(f"invalid --message: {_describe(error, 'message')}") from error
    result = reduce_ui_message_stream(chunks, message=start)
    if result.error is not None:
        error = result.error
        raise CliError(f"protocol violation at {error.chunk_type} {error.chunk_id!r}: {error}", status=1)
    out.write(dumps(result.message) + "\n")


def _convert(args: argparse.Namespace, out: TextIO) -> None:
    raw = _json(_read(args.file), "the message array")
    try:
        model_messages = convert_ui_messages_json(raw, ignore_incomplete_tool_calls=args.ignore_incomplete_tool_calls)
    except (InvalidUIMessageError, MessageConversionError) as error:
        raise CliError(f"invalid messages: {error}") from error
    out.write(dumps([m.to_wire() for m in model_messages]) + "\n")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stepline", description="Durable AI agent conversations on AWS serverless.")
    parser.add_argument("--version", action="version", version=f"stepline {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    protocol = commands.add_parser("protocol", help="work with UI Message Stream data").add_subparsers(
        dest="action", required=True
    )
    reduce = protocol.add_parser("reduce", help="fold a chunk stream into the final UIMessage")
    reduce.add_argument("file", nargs="?", help="JSON array of chunks, or an SSE body with --sse (default: stdin)")
    reduce.add_argument("--sse", action="store_true", help="read an SSE body instead of a JSON array")
    reduce.add_argument("--message", metavar="START.json", help="an assistant message to continue")
    reduce.set_defaults(handler=_reduce)
    convert = protocol.add_parser("convert", help="turn UIMessages into model messages")
    convert.add_argument("file", nargs="?", help="JSON array of UIMessages (default: stdin)")
    convert.add_argument(
        "--ignore-incomplete-tool-calls", action="store_true", help="drop tool calls that have no result yet"
    )
    convert.set_defaults(handler=_convert)
    add_run_parser(commands)
    add_runs_parser(commands)
    add_init_parser(commands)
    add_dev_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        args.handler(args, out or sys.stdout)
    except CliError as error:
        print(f"stepline: {error}", file=sys.stderr)
        return error.status
    except StepLineError as error:
        print(f"stepline: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
