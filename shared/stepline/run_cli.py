"""`stepline run`: one agent turn in this process, printed as it streams.

Plain output writes the answer text to standard output and the trace (reasoning, tool calls,
tool results, approvals) to standard error. `--sse` writes the UI Message Stream exactly as the
HTTP endpoint sends it. A tool that needs approval asks on the terminal, or follows `--approve`
/ `--deny`; without a terminal and without either flag the run stops and says what it waits for.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from .llm.base import LanguageModel
from .llm.registry import DEMO_SCRIPT, resolve_model
from .loop.approval import ApprovalDecision
from .loop.stop import is_step_count
from .loop.stream_text import StreamTextResult, stream_text
from .loop.tools import Tool
from .protocol import stream_parts as sp
from .protocol._json import dumps
from .protocol.sse import DONE, encode_chunk
from .protocol.to_chunks import UIStreamOptions, to_ui_message_stream_async
from .tools import ToolsetError, load_toolset

__all__ = ["add_run_parser"]

EXIT_WAITING = 3


def add_run_parser(commands: Any) -> None:
    """Register `stepline run` on the top-level subcommand parser."""
    run = commands.add_parser("run", help="run one agent turn in this process")
    run.add_argument("prompt", help="the user's message")
    run.add_argument("--model", help="provider:model-id (default: $STEPLINE_MODEL, else the scripted demo)")
    run.add_argument("--tools", help="a module exposing TOOLS (default: $STEPLINE_TOOLS, else stepline.tools.demo)")
    run.add_argument("--instructions", help="the system prompt")
    run.add_argument("--max-steps", type=int, default=10, help="stop after this many model steps (default 10)")
    run.add_argument("--sse", action="store_true", help="print the UI Message Stream as SSE")
    decision = run.add_mutually_exclusive_group()
    decision.add_argument("--approve", action="store_true", help="approve every approval request")
    decision.add_argument("--deny", action="store_true", help="deny every approval request")
    run.set_defaults(handler=_run)


def _model(args: argparse.Namespace, err: TextIO) -> LanguageModel:
    spec = args.model or os.environ.get("STEPLINE_MODEL")
    if spec:
        return resolve_model(spec)
    err.write(
        f"stepline: no model configured (--model or STEPLINE_MODEL): using the scripted demo model {DEMO_SCRIPT.name}\n"
    )
    return resolve_model(f"scripted:{DEMO_SCRIPT}")


def _toolset(args: argparse.Namespace) -> tuple[Sequence[Tool], Mapping[str, Any]]:
    name = args.tools or os.environ.get("STEPLINE_TOOLS") or "stepline.tools.demo"
    try:
        return load_toolset(name)
    except ToolsetError as error:
        raise SystemExit(f"stepline: {error}") from error


class _Printer:
    def __init__(self, out: TextIO, err: TextIO, sse: bool) -> None:
        self.out, self.err, self.sse = out, err, sse
        self.event_id = 1

    async def show(self, result: StreamTextResult) -> None:
        if self.sse:
            async for chunk in to_ui_message_stream_async(
                result.full_stream, UIStreamOptions(response_message_id=result.state.message_id)
            ):
                self.out.write(encode_chunk(chunk, event_id=self.event_id))
                self.event_id += 1
                self.out.flush()
            return
        async for part in result.full_stream:
            self._plain(part)

    def _plain(self, part: sp.TextStreamPart) -> None:
        match part:
            case sp.TextDelta(text=text):
                self.out.write(text)
                self.out.flush()
            case sp.ReasoningDelta(text=text):
                self.err.write(text)
            case sp.ReasoningEnd():
                self.err.write("\n")
            case sp.ToolCall(tool_name=name, input=value):
                self.err.write(f"→ {name} {dumps(value)}\n")
            case sp.ToolResult(tool_name=name, output=value, preliminary=preliminary):
                self.err.write(f"← {name}{' (preliminary)' if preliminary else ''} {dumps(value)}\n")
            case sp.ToolError(tool_name=name, error=error):
                self.err.write(f"✗ {name}: {error}\n")
            case sp.ToolOutputDenied(tool_name=name):
                self.err.write(f"✗ {name}: denied\n")
            case sp.StreamError(error=error):
                self.err.write(f"stepline: error: {error}\n")
            case sp.Finish():
                self.out.write("\n")
            case _:
                pass


def _decide(result: StreamTextResult, args: argparse.Namespace, err: TextIO) -> list[ApprovalDecision] | None:
    decisions: list[ApprovalDecision] = []
    for pending in result.state.pending_approvals:
        call = pending.tool_call
        if args.approve or args.deny:
            approved = bool(args.approve)
        elif sys.stdin.isatty():
            answer = input(f"Approve {call.tool_name} {dumps(call.input)}? [y/N] ")
            approved = answer.strip().lower() in ("y", "yes")
        else:
            err.write(
                f"stepline: waiting for approval of {call.tool_name} {dumps(call.input)}"
                " (rerun with --approve or --deny)\n"
            )
            return None
        decisions.append(
            ApprovalDecision(
                approval_id=pending.approval_id,
                approved=approved,
                reason=None if approved else "denied on the command line",
            )
        )
    return decisions


async def _turn(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    tools, approval = _toolset(args)
    options: dict[str, Any] = {
        "model": _model(args, err),
        "tools": tools,
        "tool_approval": approval or None,
        "instructions": args.instructions,
        "stop_when": is_step_count(args.max_steps),
    }
    printer = _Printer(out, err, args.sse)
    result = stream_text(prompt=args.prompt, **options)
    while True:
        await printer.show(result)
        await result.consume()
        outcome = result.outcome
        if outcome is None or outcome.kind != "await-approval":
            break
        decisions = _decide(result, args, err)
        if decisions is None:
            return EXIT_WAITING
        result = stream_text(state=result.state, approval_decisions=decisions, **options)
    if args.sse:
        out.write(DONE)
    if result.error is not None or (outcome is not None and outcome.kind == "failed"):
        return 1
    return 0


def _run(args: argparse.Namespace, out: TextIO) -> None:
    status = asyncio.run(_turn(args, out, sys.stderr))
    if status:
        raise SystemExit(status)
