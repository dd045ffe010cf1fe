"""What the store's compare-and-set writes answer: an approval decision, a tool-call claim."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .records import ApprovalRecord, ToolCallRecord

__all__ = ["ClaimResult", "DecisionResult"]


@dataclass(frozen=True, slots=True)
class DecisionResult:
    """The approval after a decision; `first` is True for the call that decided it."""

    approval: ApprovalRecord
    first: bool


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """What a tool-call claim found.

    `claimed`: run the tool now. `done`: it already ran (the stored outcome is in `record`).
    `in_progress`: another worker holds it, or a crash left it `running` after a possible side
    effect — report it, never run it again silently.
    """

    kind: Literal["claimed", "done", "in_progress"]
    record: ToolCallRecord
