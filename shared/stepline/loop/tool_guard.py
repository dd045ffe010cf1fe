"""Exactly-once tool execution across processes: a guard asked before and after each tool runs.

In process there is nothing to guard. On AWS a step may run twice (a Lambda crashes and Step
Functions retries it), so the step handler installs a guard backed by the store's tool-call claims:

- `before` returns `run` (this process holds the claim: execute now), `reuse` (the tool already
  ran in an earlier attempt: its stored outcome is used, the body does not run again) or `refuse`
  (an earlier attempt started the tool and never reported back: it may have had a side effect, so
  it is reported as interrupted and never silently re-run).
- `after` records the outcome before it is streamed, so a crash after it is a `reuse` next time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import JsonValue

from .state import ToolCallRecord

__all__ = ["GuardDecision", "ToolGuard", "ToolInterruptedError"]


class ToolInterruptedError(RuntimeError):
    """An earlier attempt started this tool and never reported back; it is not run again."""


@dataclass(frozen=True, slots=True)
class GuardDecision:
    """What to do with a tool call; `output`/`error_text` carry a reused outcome."""

    action: Literal["run", "reuse", "refuse"]
    output: JsonValue = None
    error_text: str | None = None


class ToolGuard(Protocol):
    """Claims tool calls so each runs once."""

    async def before(self, call: ToolCallRecord, step_number: int) -> GuardDecision: ...

    async def after(self, call: ToolCallRecord, output: JsonValue, error_text: str | None) -> None: ...
