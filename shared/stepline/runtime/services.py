"""The composition root: what a process needs to run turns, built once (per Lambda cold start).

Pure: it holds ports (store, orchestrator, model) and values; `stepline.aws.wiring` and
`stepline.local` build the concrete ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..llm.base import LanguageModel
from ..loop.config import ApprovalSetting, LoopConfig
from ..loop.stop import is_step_count
from ..loop.tools import Tool
from ..store.blobs import BlobStore
from ..store.event_batcher import DEFAULT_WINDOW
from ..store.ports import Store
from .guard import StoreToolGuard
from .notifications import RunNotifier

__all__ = ["Orchestrator", "Services"]


class Orchestrator(Protocol):
    """The workflow engine that sequences a run's steps (Step Functions)."""

    def start_run(self, user_id: str, run_id: str) -> None:
        """Start the run's execution; a duplicated start is harmless (the execution is named by run id)."""
        ...

    def stop_run(self, user_id: str, run_id: str) -> None:
        """Stop the run's execution (abort)."""
        ...

    def resume(self, task_token: str) -> bool:
        """Complete a waiting task; False when it was already resumed or has expired."""
        ...


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(kw_only=True)
class Services:
    """Everything the worker functions need."""

    store: Store
    model: LanguageModel
    blobs: BlobStore | None = None
    """Workspace files and artifacts, for the tools (`RunContext.blobs`); None when there is no bucket."""
    orchestrator: Orchestrator | None = None
    tools: Sequence[Tool] = ()
    tool_approval: Mapping[str, ApprovalSetting] | None = None
    instructions: str | None = None
    approval_timeout_ms: int = 24 * 3600 * 1000
    max_steps: int = 25
    steps_per_execution: int = 400
    """Model steps one execution runs before it continues as a new one (the 25,000-event history
    limit: a step with a wait, an expiry and retries is under 40 events, so 400 leave room)."""
    max_retries: int = 2
    """Retries inside a step (safe boundary only); Step Functions retries the step after that."""
    approval_secret: bytes | None = None
    delta_window: float = DEFAULT_WINDOW
    notifier: RunNotifier | None = None
    """Tells the streams following a run that its log has grown (None: they only poll)."""
    client: str | None = None
    clock: Callable[[], int] = field(default=_now_ms)

    def loop_config(self, *, user_id: str, run_id: str, claim_token: str, **overrides: Any) -> LoopConfig:
        """The loop configuration of one step of a run (with the store-backed tool guard)."""
        guard = StoreToolGuard(self.store, user_id=user_id, run_id=run_id, claim_token=claim_token, now=self.clock)
        options: dict[str, Any] = {
            "model": self.model,
            "instructions": self.instructions,
            "tools": list(self.tools),
            "tool_approval": dict(self.tool_approval) if self.tool_approval else None,
            "approval_secret": self.approval_secret,
            "stop_when": is_step_count(self.max_steps),
            "max_retries": self.max_retries,
            "tool_guard": guard,
            "clock": self.clock,
            **overrides,
        }
        return LoopConfig(**options)
