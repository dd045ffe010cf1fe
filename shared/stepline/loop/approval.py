"""Tool approval: the policy, request signatures, and the re-check of decisions.

Policy (`LoopConfig.tool_approval`): per tool name a status or a function, or one function for all
tools; the result is `not-applicable`, `approved`, `denied` or `user-approval`, optionally with a
reason (`resolve-tool-approval.ts`). Signatures follow `tool-approval-signature.ts` (`ai@7.0.173`):
HMAC-SHA256, base64url, over `["ai-sdk-tool-approval-v1", approvalId, toolCallId, toolName,
sha256(canonical JSON of the input)]` serialised as JSON.

A decision coming back from a client is untrusted (STYLE example 10). `check_decisions` matches it
against the run's own pending approvals and rejects: an unknown approval id, a decision naming
another tool call, changed arguments, a missing or invalid signature when a secret is configured,
and a second decision for the same approval.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import JsonValue

from ..errors import StepLineError
from .config import LoopConfig
from .state import PendingApproval
from .tools import ApprovalPolicy, ApprovalSetting, ApprovalStatus, Tool

__all__ = [
    "approval_rule",
    "ApprovalDecision",
    "InvalidApprovalError",
    "canonical_json",
    "check_decisions",
    "resolve_approval",
    "sign_approval",
    "verify_approval",
]


class InvalidApprovalError(StepLineError):
    """A decision that does not match a pending approval of this run; nothing was executed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalDecision:
    """A human decision, as a client or the webhook reports it."""

    approval_id: str
    approved: bool
    reason: str | None = None
    tool_call_id: str | None = None
    input: JsonValue = None
    has_input: bool = False
    """True when the client echoed the tool input (then it must equal the stored input)."""
    signature: str | None = None


def approval_rule(
    policy: Mapping[str, ApprovalSetting | ApprovalPolicy] | ApprovalPolicy | None, tool: Tool | None, tool_name: str
) -> ApprovalSetting | ApprovalPolicy | None:
    """The rule that decides a call of `tool_name`; None when nothing applies.

    The run's entry for it, else the tool's own (`@tool(approval=...)`), else the run-wide policy.
    """
    own = tool.approval if tool is not None else None
    if policy is None or callable(policy):
        return own if own is not None else policy
    return cast("ApprovalSetting | ApprovalPolicy | None", policy.get(tool_name, own))


async def resolve_approval(
    config: LoopConfig, tool_name: str, tool_input: JsonValue
) -> tuple[ApprovalStatus, str | None]:
    """The approval status and reason for a valid tool call."""
    setting: Any = approval_rule(config.tool_approval, config.tool(tool_name), tool_name)
    if setting is None:
        return "not-applicable", None
    if callable(setting):
        setting = setting(tool_name, tool_input, config.runtime_context)
        if inspect.isawaitable(setting):
            setting = await setting
    return _normalise(cast("ApprovalSetting | None", setting))


def _normalise(setting: ApprovalSetting | None) -> tuple[ApprovalStatus, str | None]:
    if setting is None:
        return "not-applicable", None
    if isinstance(setting, tuple):
        return setting
    return setting, None


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and JavaScript number formatting (the SDK's `canonicalJSON`)."""
    if isinstance(value, dict):
        items = sorted(cast(dict[str, Any], value).items())
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{canonical_json(v)}" for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(canonical_json(v) for v in cast(list[Any], value)) + "]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, ensure_ascii=False)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def sign_approval(secret: bytes, *, approval_id: str, tool_call_id: str, tool_name: str, input: JsonValue) -> str:
    """The approval request's signature."""
    digest = _b64url(hashlib.sha256(canonical_json(input).encode()).digest())
    payload = json.dumps(
        ["ai-sdk-tool-approval-v1", approval_id, tool_call_id, tool_name, digest],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return _b64url(hmac.new(secret, payload.encode(), hashlib.sha256).digest())


def verify_approval(secret: bytes, signature: str, pending: PendingApproval) -> bool:
    """Constant-time check of a signature against a pending approval."""
    call = pending.tool_call
    expected = sign_approval(
        secret,
        approval_id=pending.approval_id,
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        input=call.input,
    )
    return hmac.compare_digest(expected, signature)


def check_decisions(
    pending: Sequence[PendingApproval], decisions: Sequence[ApprovalDecision], *, secret: bytes | None
) -> list[tuple[PendingApproval, ApprovalDecision]]:
    """Match decisions to pending approvals, or raise `InvalidApprovalError` saying which is wrong."""
    by_id = {p.approval_id: p for p in pending}
    matched: list[tuple[PendingApproval, ApprovalDecision]] = []
    seen: set[str] = set()
    for decision in decisions:
        record = by_id.get(decision.approval_id)
        if record is None:
            raise InvalidApprovalError(f"approval {decision.approval_id!r} is not pending for this run")
        if decision.approval_id in seen:
            raise InvalidApprovalError(f"approval {decision.approval_id!r} was decided twice in one request")
        seen.add(decision.approval_id)
        call = record.tool_call
        if decision.tool_call_id is not None and decision.tool_call_id != call.tool_call_id:
            raise InvalidApprovalError(f"approval {decision.approval_id!r} belongs to another tool call")
        if decision.has_input and canonical_json(decision.input) != canonical_json(call.input):
            raise InvalidApprovalError(f"approval {decision.approval_id!r}: the tool input was changed")
        if secret is not None and (
            decision.signature is None or not verify_approval(secret, decision.signature, record)
        ):
            raise InvalidApprovalError(f"approval {decision.approval_id!r}: missing or invalid signature")
        matched.append((record, decision))
    return matched
