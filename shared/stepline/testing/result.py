"""What a turn run by the harness amounted to: the message, the tools, the stream, the functions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from ..store.records import ApprovalRecord, RunRecord

__all__ = ["ToolExecution", "TurnResult"]


@dataclass(frozen=True, slots=True)
class ToolExecution:
    """One tool call of the run, as the store recorded it.

    Attributes:
        tool_call_id: The model's id of the call.
        name: The tool's name.
        input: The validated input the tool received (the model's, if it did not validate).
        status: success, error, denied, expired, awaiting_approval, pending (a question) or running.
        output: What the tool returned (its last output, for a streaming tool).
        error: The error text the model was shown, when the call failed.
    """

    tool_call_id: str
    name: str
    input: JsonValue
    status: str
    output: JsonValue
    error: str | None


@dataclass(frozen=True)
class TurnResult:
    """A turn, read back from the store the way a client and an operator would see it.

    Attributes:
        run: The run record (status, agent, agent_fingerprint, context, usage, error).
        message: The assistant UIMessage the run's event log reduces to (what `useChat` shows).
        stored_message: The assistant message as the store holds it (`id`, `role`, `parts`).
        chunks: The UI Message Stream chunks of the run, in order (wire dicts).
        tool_calls: Every tool call of the run, in step order.
        pending_approvals: Approval requests still waiting for a decision.
        invocations: The functions that ran, in order (BeginTurn, ModelStep, AwaitInput, …).
        stream_errors: The texts of the stream's `error` chunks (what the client was told).
    """

    run: RunRecord
    message: dict[str, Any]
    stored_message: dict[str, Any]
    chunks: list[dict[str, JsonValue]]
    tool_calls: list[ToolExecution]
    pending_approvals: list[ApprovalRecord] = field(default_factory=list[ApprovalRecord])
    invocations: list[str] = field(default_factory=list[str])
    stream_errors: list[str] = field(default_factory=list[str])

    @property
    def status(self) -> str:
        """completed, failed, aborted, or waiting_approval / waiting_user when left waiting."""
        return self.run.status

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def conversation_id(self) -> str:
        return self.run.conversation_id

    @property
    def text(self) -> str:
        """The answer's text: every text part of the message, joined."""
        return "".join(str(p.get("text", "")) for p in self.message.get("parts", []) if p.get("type") == "text")

    @property
    def parts(self) -> list[dict[str, Any]]:
        return list(self.message.get("parts", []))

    def tool(self, name: str) -> ToolExecution:
        """The first call of the tool `name` (AssertionError naming the calls there were)."""
        for execution in self.tool_calls:
            if execution.name == name:
                return execution
        raise AssertionError(f"no call of {name}; the run called: {[e.name for e in self.tool_calls] or 'nothing'}")

    def chunk_types(self) -> list[str]:
        return [str(c.get("type")) for c in self.chunks]
