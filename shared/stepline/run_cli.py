"""`stepline run`: one agent turn in this process, printed as it streams.

The agent is the one `stepline dev` and the functions run: `--agent` or `STEPLINE_AGENT`
(`package.module:attribute`, importable from the working directory; a mapping of agents takes
`--agent-name`), else the default agent (the model of `--model` / `STEPLINE_MODEL`, else the
scripted demo book, with the tools of `--tools` / `STEPLINE_TOOLS`, else the workspace tools). Its
tools get a `RunContext` over an in-memory store and workspace that last for the command.

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
import uuid
from pathlib import Path
from typing import Any, TextIO

from .agent.definition import Agent
from .agent.loading import agents_from_env
from .llm.base import LanguageModel
from .llm.registry import DEMO_BOOK, resolve_with_timeout
from .loop.approval import ApprovalDecision
from .loop.stream_text import StreamTextResult, stream_text
from .protocol import stream_parts as sp
from .protocol._json import dumps
from .protocol.sse import DONE, encode_chunk
from .protocol.to_chunks import UIStreamOptions, to_ui_message_stream_async
from .store.blobs import MemoryBlobStore
from .store.memory import MemoryStore
from .tools.context import RunContext

__all__ = ["add_run_parser"]

EXIT_WAITING = 3


def add_run_parser(commands: Any) -> None:
    """Register `stepline run` on the top-level subcommand parser."""
    run = commands.add_parser("run", help="run one agent turn in this process")
    run.add_argument("prompt", help="the user's message")
    run.add_argument("--agent", help="package.module:attribute of the agent (default: $STEPLINE_AGENT)")
    run.add_argument("--agent-name", help="which agent of a mapping of agents (default: the first)")
    run.add_argument("--model", help="provider:model-id (default: $STEPLINE_MODEL, else the scripted demo book)")
    run.add_argument("--tools", help="the default agent's tools: a module exposing TOOLS (default: $STEPLINE_TOOLS)")
    run.add_argument("--instructions", help="the system prompt (overrides the agent's)")
    run.add_argument("--max-steps", type=int, default=10, help="steps of an agent without stop_when (default 10)")
    run.add_argument("--sse", action="store_true", help="print the UI Message Stream as SSE")
    decision = run.add_mutually_exclusive_group()
    decision.add_argument("--approve", action="store_true", help="approve every approval request")
    decision.add_argument("--deny", action="store_true", help="deny every approval request")
    run.set_defaults(handler=_run)


def _agent(args: argparse.Namespace, err: TextIO) -> tuple[Agent, LanguageModel]:
    env = {
        "STEPLINE_AGENT": args.agent or os.environ.get("STEPLINE_AGENT", ""),
        "STEPLINE_TOOLS": args.tools or os.environ.get("STEPLINE_TOOLS", ""),
    }
    spec = args.model or os.environ.get("STEPLINE_MODEL") or ""
    agents = agents_from_env(env, search=Path.cwd())  # a StepLineError here names what is wrong (exit 2)
    agent = agents.get(args.agent_name)
    if not spec and agent.model is None:
        book = DEMO_BOOK.name
        err.write(f"stepline: no model configured (--model or STEPLINE_MODEL): using the scripted demo book {book}\n")
    model = agent.language_model(resolve_with_timeout, spec or f"scripted:{DEMO_BOOK}")
    return agent, model


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
    agent, model = _agent(args, err)
    run_id, message_id = f"run-{uuid.uuid4().hex[:12]}", f"msg-{uuid.uuid4().hex[:12]}"
    context = RunContext(
        user_id="local",
        conversation_id="cli",
        run_id=run_id,
        message_id=message_id,
        store=MemoryStore(),
        blobs=MemoryBlobStore(),
        agent=agent.name,
    )
    options = await agent.loop_options(model=model, context=context, max_steps=args.max_steps)
    if args.instructions:
        options["instructions"] = args.instructions
    printer = _Printer(out, err, args.sse)
    result = stream_text(prompt=args.prompt, run_id=run_id, message_id=message_id, **options)
    while True:
        await printer.show(result)
        await result.consume()
        outcome = result.outcome
        if outcome is not None and outcome.kind == "await-client":
            waiting = ", ".join(c.tool_name for c in result.state.pending_client_calls)
            err.write(f"stepline: the agent waits for the client's answer to {waiting} (answer it in a chat client)\n")
            return EXIT_WAITING
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
