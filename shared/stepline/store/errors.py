"""Store errors. Each says what was refused and why; none leaks another user's data.

StoreError
├── NotFound               no such item for this user (also: it belongs to someone else)
├── Conflict               the write contradicts what is stored
│   ├── ActiveRunExists    the conversation already has a run in progress
│   ├── DecisionConflict   a different decision for an approval already decided
│   └── TerminalState      the item reached a terminal state and cannot move
├── Gone                   the approval expired
├── InvalidCursor          a listing cursor this store did not give out (for this user)
└── ConcurrentUpdate       another writer won a compare-and-set; re-read and retry
"""

from __future__ import annotations

from ..errors import StepLineError

__all__ = [
    "ActiveRunExists",
    "ConcurrentUpdate",
    "Conflict",
    "DecisionConflict",
    "Gone",
    "InvalidCursor",
    "NotFound",
    "StoreError",
    "TerminalState",
]


class StoreError(StepLineError):
    """Base of the store's errors."""


class NotFound(StoreError):
    """No such item for this user."""


class Conflict(StoreError):
    """The write contradicts the stored state."""


class ActiveRunExists(Conflict):
    """The conversation already has an active run."""

    def __init__(self, conversation_id: str, run_id: str) -> None:
        super().__init__(f"conversation {conversation_id} already has an active run ({run_id})")
        self.run_id = run_id


class DecisionConflict(Conflict):
    """The approval was already decided differently."""


class TerminalState(Conflict):
    """The item is in a terminal state."""


class Gone(StoreError):
    """The approval expired."""


class InvalidCursor(StoreError, ValueError):
    """A `cursor` that is not one the store gave out for this user's listing (a client's mistake: 400)."""


class ConcurrentUpdate(StoreError):
    """Another writer changed the item first."""
