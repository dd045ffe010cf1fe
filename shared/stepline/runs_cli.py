"""`stepline runs`: the run inspector in the terminal.

    stepline runs list [--data DIR] [--limit N] [--json]
        The runs in a `stepline dev` data folder (default .stepline), newest first: every user's,
        since the folder is one developer's machine.
    stepline runs show RUN_ID [--data DIR | --url URL --token TOKEN] [--json]
        One run step by step: each model request as sent (instructions, messages, tools with their
        schemas, settings), the answer, tokens, timings, retries, and each tool with its input,
        output, duration and who approved it. From the data folder, or from a running server's
        `GET /api/runs/{id}/steps` (a `stepline dev`, or a deployed stack: the owner's token).

The data folder is read, never written, so it works while `stepline dev` runs on it and after it
stopped. `--json` prints what the API answers, for scripts.
"""

from __future__ import annotations

import argparse
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from .errors import StepLineError
from .protocol._json import dumps, loads_strict

__all__ = ["add_runs_parser", "render_run"]

_DATABASE = "stepline.db"


def add_runs_parser(commands: Any) -> None:
    """Register `stepline runs list` and `stepline runs show` on the top-level subcommand parser."""
    runs = commands.add_parser("runs", help="inspect runs: steps, requests as sent, tokens, timings")
    actions = runs.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="the runs of a stepline dev data folder, newest first")
    listing.add_argument("--data", default=".stepline", metavar="DIR", help="the data folder (default .stepline)")
    listing.add_argument("--limit", type=int, default=20, help="how many (default 20)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_list)
    show = actions.add_parser("show", help="one run step by step")
    show.add_argument("run_id", metavar="RUN_ID")
    show.add_argument("--data", default=".stepline", metavar="DIR", help="the data folder (default .stepline)")
    show.add_argument("--url", help="a running server instead (http://127.0.0.1:8000, or a stack's UiUrl)")
    show.add_argument("--token", help="with --url: the bearer token of the run's owner")
    show.add_argument("--json", action="store_true", help="print JSON (what GET /api/runs/{id}/steps answers)")
    show.set_defaults(handler=_show)


def _store(data: str) -> Any:
    folder = Path(data)
    if not (folder / _DATABASE).is_file():
        raise StepLineError(f"no stepline dev data in {folder} (run stepline dev first, or name it with --data DIR)")
    from .store.sqlite import SqliteStore

    return SqliteStore(folder / _DATABASE)


def _list(args: argparse.Namespace, out: TextIO) -> None:
    store = _store(args.data)
    try:
        runs = store.all_runs()[: max(args.limit, 0)]
        rows: list[dict[str, Any]] = [
            {
                "runId": r.run_id,
                "userId": r.user_id,
                "conversationId": r.conversation_id,
                "agent": r.agent,
                "model": f"{r.provider}:{r.model}",
                "status": r.status,
                "steps": len(store.list_steps(r.user_id, r.run_id)),
                "startedAt": r.started_at,
                "endedAt": r.ended_at,
            }
            for r in runs
        ]
    finally:
        store.close()
    if args.json:
        out.write(dumps(rows) + "\n")
        return
    if not rows:
        out.write("no runs yet\n")
        return
    out.write(f"{'RUN':<34} {'STATUS':<17} {'AGENT':<14} {'MODEL':<28} {'USER':<14} DURATION\n")
    for row, run in zip(rows, runs, strict=True):
        took = _duration(run.ended_at - run.started_at) if run.ended_at is not None else "running"
        agent = str(row["agent"] or "-")
        out.write(f"{row['runId']:<34} {row['status']:<17} {agent:<14} {row['model']:<28} {row['userId']:<14} {took}\n")


def _show(args: argparse.Namespace, out: TextIO) -> None:
    view = _remote(args.url, args.token, args.run_id) if args.url else _local(args.data, args.run_id)
    out.write(dumps(view) + "\n" if args.json else render_run(view))


def _local(data: str, run_id: str) -> dict[str, Any]:
    from .runtime.inspection import run_view

    store = _store(data)
    try:
        owner = next((r.user_id for r in store.all_runs() if r.run_id == run_id), None)
        if owner is None:
            raise StepLineError(f"no run {run_id} in {data}")
        return run_view(store, owner, run_id)
    finally:
        store.close()


def _remote(url: str, token: str | None, run_id: str) -> dict[str, Any]:
    address = f"{url.rstrip('/')}/api/runs/{urllib.parse.quote(run_id, safe='')}/steps"
    request = urllib.request.Request(address, headers={"authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return cast(dict[str, Any], loads_strict(response.read().decode()))
    except urllib.error.HTTPError as error:
        raise StepLineError(f"{address} answered {error.code}: {error.read().decode()[:300]}") from None
    except urllib.error.URLError as error:
        raise StepLineError(f"cannot reach {url}: {error.reason}") from None


def _duration(ms: int | None) -> str:
    if ms is None:
        return "-"
    return f"{ms} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else dumps(value)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _message_line(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return _short(content)
    parts = cast(Sequence[Mapping[str, Any]], content or [])
    bits = [
        _short(p.get("text")) if p.get("type") == "text" else f"[{p.get('type')} {p.get('toolName') or ''}]".strip()
        for p in parts
    ]
    return " ".join(bits)


def _request_lines(request: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    for message in cast(Sequence[Mapping[str, Any]], request.get("instructions") or []):
        lines.append(f"    system     {_message_line(message)}")
    for message in cast(Sequence[Mapping[str, Any]], request.get("messages") or []):
        lines.append(f"    {message.get('role', '?'):<10} {_message_line(message)}")
    for tool in cast(Sequence[Mapping[str, Any]], request.get("tools") or []):
        schema: Any = tool.get("inputSchema") or tool.get("args") or {}
        lines.append(f"    tool       {tool.get('name')}: {_short(schema, 120)}")
    if request.get("settings"):
        lines.append(f"    settings   {_short(request['settings'])}")
    if request.get("providerOptions"):
        lines.append(f"    options    {_short(request['providerOptions'])}")
    return lines


def _step_lines(step: Mapping[str, Any]) -> list[str]:
    usage = cast(Mapping[str, Any], step.get("usage") or {})
    timings = cast(Mapping[str, Any], step.get("timings") or {})
    lines = [
        f"step {step.get('stepNumber')}  {step.get('finishReason')}  "
        f"tokens in {usage.get('inputTokens', '-')} / out {usage.get('outputTokens', '-')}  "
        f"queued {_duration(timings.get('queuedMs'))}  first token {_duration(timings.get('timeToFirstTokenMs'))}  "
        f"took {_duration(timings.get('durationMs'))}"
    ]
    request = cast(Mapping[str, Any] | None, step.get("request"))
    lines += ["  request as sent:", *_request_lines(request)] if request else ["  (no request recorded)"]
    response = cast(Mapping[str, Any], step.get("response") or {})
    if response.get("reasoning"):
        lines.append(f"  reasoning  {_short(response['reasoning'])}")
    if response.get("text"):
        lines.append(f"  answer     {_short(response['text'])}")
    for call in cast(Sequence[Mapping[str, Any]], response.get("toolCalls") or []):
        lines.append(f"  calls      {call.get('toolName')} {_short(call.get('input'), 120)}")
    for retry in cast(Sequence[Mapping[str, Any]], step.get("retries") or []):
        lines.append(f"  retried    attempt {retry.get('attempt')}: {retry.get('reason') or retry.get('error')}")
    for tool in cast(Sequence[Mapping[str, Any]], step.get("tools") or []):
        approval = cast(Mapping[str, Any] | None, tool.get("approval"))
        decided = (
            f"  {approval.get('decision') or approval.get('status')} by {approval.get('decidedBy')}" if approval else ""
        )
        lines.append(
            f"  tool       {tool.get('toolName')}  {tool.get('status')}  {_duration(tool.get('durationMs'))}{decided}"
        )
        lines.append(f"             input {_short(tool.get('input'), 120)}")
        lines.append(f"             output {_short(tool.get('output') or tool.get('error'), 120)}")
        sub = cast(Mapping[str, Any] | None, tool.get("subAgent"))
        if sub:
            agent = sub.get("agent") or "-"
            lines.append(f"             sub-agent {agent}: run {sub.get('runId')}  {sub.get('status')}")
    return lines


def _tree_lines(sub_agents: Sequence[Mapping[str, Any]], indent: str = "  ") -> list[str]:
    lines: list[str] = []
    for sub in sub_agents:
        usage = cast(Mapping[str, Any], sub.get("usage") or {})
        lines.append(
            f"{indent}{sub.get('agent') or '-'}  {sub.get('runId')}  {sub.get('status')}  "
            f"tokens in {usage.get('inputTokens', '-')} / out {usage.get('outputTokens', '-')}  "
            f"(call {sub.get('toolCallId')})"
        )
        lines += _tree_lines(cast(Sequence[Mapping[str, Any]], sub.get("subAgents") or []), indent + "  ")
    return lines


def render_run(view: Mapping[str, Any]) -> str:
    """The run as text: a header with its sub-agent tree, then each step with its request, answer, timings and tools."""
    usage = cast(Mapping[str, Any], view.get("usage") or {})
    took = view["endedAt"] - view["startedAt"] if view.get("endedAt") is not None else None
    lines = [
        f"run {view['runId']}  {view['status']}  agent {view.get('agent') or '-'}  "
        f"{view.get('provider')}:{view.get('model')}  took {_duration(took)}",
        f"tokens in {usage.get('inputTokens', '-')} / out {usage.get('outputTokens', '-')}  "
        f"trace {view.get('traceId') or '-'}",
    ]
    if view.get("error"):
        lines.append(f"error {_short(view['error'])}")
    parent = cast(Mapping[str, Any] | None, view.get("parent"))
    if parent:
        lines.append(f"sub-agent of run {parent.get('runId')} (call {parent.get('toolCallId')})")
    sub_agents = cast(Sequence[Mapping[str, Any]], view.get("subAgents") or [])
    if sub_agents:
        lines += ["sub-agents (stepline runs show RUN_ID):", *_tree_lines(sub_agents)]
    for step in cast(Sequence[Mapping[str, Any]], view.get("steps") or []):
        lines += ["", *_step_lines(step)]
    return "\n".join(lines) + "\n"
