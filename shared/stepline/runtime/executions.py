"""What the reconciler needs to know of a run's executions (the port; Step Functions implements it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Execution", "Executions"]


@dataclass(frozen=True, slots=True)
class Execution:
    """What `DescribeExecution` says of a run's latest generation."""

    generation: int
    status: str
    """RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED or PENDING_REDRIVE."""
    error: str | None = None
    cause: str | None = None


class Executions(Protocol):
    """Where a run's executions are looked up (`StepFunctionsOrchestrator`)."""

    def latest_execution(self, run_id: str) -> Execution | None:
        """The run's last generation that exists (None: not even the first was started)."""
        ...
