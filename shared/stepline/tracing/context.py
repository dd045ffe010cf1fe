"""A run's trace context: the trace id and the root span id every part of the run joins.

Created when the run starts (`RunTrace.new`) and stored on the run as a W3C `traceparent`
(`00-<32 hex trace id>-<16 hex span id>-<flags>`). The span id names the run's root span,
`invoke_agent {agent}`, which is written when the run ends (a run can wait for days, so no
process holds it open); every function invocation and API request of the run is a child of it.
A sub-agent's run derives its context from the parent's (`child_of`): the same trace, its root
a child of the parent's `execute_tool` span. Pure: the standard library only.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Final

__all__ = ["RunTrace"]

_TRACEPARENT: Final = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


@dataclass(frozen=True, slots=True)
class RunTrace:
    """The ids of a run's trace, and where its root span hangs when it has a parent (a sub-agent)."""

    trace_id: str
    """32 lowercase hex digits, never all zeros."""
    span_id: str
    """16 lowercase hex digits: the run's root span."""
    sampled: bool = True
    parent_span_id: str | None = None
    """A sub-agent's: the parent run's span its root span is a child of."""

    @classmethod
    def new(cls, *, sampled: bool = True) -> RunTrace:
        """Fresh random ids (W3C trace context: random, not all zeros)."""
        return cls(trace_id=_nonzero(16), span_id=_nonzero(8), sampled=sampled)

    def child_of(self, parent_span_id: str) -> RunTrace:
        """The context of a run started by this one (a sub-agent) from `parent_span_id`: same trace, a new root."""
        return RunTrace(
            trace_id=self.trace_id, span_id=_nonzero(8), sampled=self.sampled, parent_span_id=parent_span_id
        )

    @property
    def traceparent(self) -> str:
        """The W3C `traceparent` of the root span (what the run record stores)."""
        flags = "01" if self.sampled else "00"
        parent = f";{self.parent_span_id}" if self.parent_span_id else ""
        return f"00-{self.trace_id}-{self.span_id}-{flags}{parent}"

    @classmethod
    def parse(cls, stored: str | None) -> RunTrace | None:
        """The context a run stores, or None (a run from before tracing, or a malformed value)."""
        if not stored:
            return None
        header, _, parent = stored.partition(";")
        match = _TRACEPARENT.match(header)
        if match is None or set(match.group(1)) == {"0"} or set(match.group(2)) == {"0"}:
            return None
        parent_span = parent if re.fullmatch(r"[0-9a-f]{16}", parent) else None
        sampled = bool(int(match.group(3), 16) & 1)
        return cls(trace_id=match.group(1), span_id=match.group(2), sampled=sampled, parent_span_id=parent_span)


def _nonzero(size: int) -> str:
    while True:
        value = secrets.token_hex(size)
        if set(value) != {"0"}:
            return value
