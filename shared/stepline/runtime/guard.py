"""The store-backed tool guard: each tool call runs once, even when a step runs twice."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import JsonValue

from ..loop.state import ToolCallRecord
from ..loop.tool_guard import GuardDecision
from ..store.ports import Store

__all__ = ["StoreToolGuard"]


class StoreToolGuard:
    """Claims a tool call in the store before it runs and records its outcome after."""

    def __init__(self, store: Store, *, user_id: str, run_id: str, claim_token: str, now: Callable[[], int]) -> None:
        self._store = store
        self._user_id = user_id
        self._run_id = run_id
        self._token = claim_token
        self._now = now

    async def before(self, call: ToolCallRecord, step_number: int) -> GuardDecision:
        claim = self._store.claim_tool_call(
            self._user_id,
            self._run_id,
            call.tool_call_id,
            tool_name=call.tool_name,
            input=call.input,
            step_index=step_number,
            claim_token=self._token,
            now=self._now(),
        )
        if claim.kind == "done":
            error = claim.record.error
            return GuardDecision(
                "reuse", output=claim.record.output, error_text=str(error.get("message")) if error else None
            )
        if claim.kind == "in_progress":
            return GuardDecision("refuse")
        self._store.start_tool_call(
            self._user_id, self._run_id, call.tool_call_id, claim_token=self._token, now=self._now()
        )
        return GuardDecision("run")

    async def after(self, call: ToolCallRecord, output: JsonValue, error_text: str | None) -> None:
        self._store.record_tool_outcome(
            self._user_id,
            self._run_id,
            call.tool_call_id,
            claim_token=self._token,
            output=output,
            error={"message": error_text} if error_text is not None else None,
            now=self._now(),
        )
