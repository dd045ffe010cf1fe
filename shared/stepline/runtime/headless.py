"""Runs that no chat client started: `POST /api/runs`, a schedule's occurrence, a webhook's delivery.

Each is a turn on the durable path like a chat message (`begin_turn`): a conversation of the user,
a user message, a run, streamed by `GET /api/chat/{conversationId}/stream`, continued by chatting.

**Idempotency.** A start with a key (the `Idempotency-Key` header, a schedule and its occurrence
time, a hook and its delivery id) takes its run id (and, when none is given, its conversation id)
from a digest of the user and the key, and records the digest of the request on the run. The same
key again finds that run instead of starting one: the same request answers it (`replayed`), a
different request under the key is refused (`IdempotencyMismatch`). Two starts racing with one key
write the same run id, and the store's conditional write lets one through; the other finds it. So
there is no separate key table to clean up: the key lives as long as its run.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import JsonValue

from ..loop.approval import canonical_json
from ..store.errors import Conflict, NotFound
from ..store.records import RunRecord
from .services import Services
from .turn import begin_turn

__all__ = ["HeadlessStart", "IdempotencyMismatch", "Started", "Trigger", "keyed_ids", "start_headless", "unattended_of"]

Trigger = Literal["api", "schedule", "hook"]


class IdempotencyMismatch(Conflict):
    """The idempotency key was used for another request (its body differs)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HeadlessStart:
    """What starts one headless run."""

    agent: str | None
    message: dict[str, Any]
    """The user message, UIMessage wire form (`id`, `role: user`, `parts`)."""
    trigger: Trigger = "api"
    conversation_id: str | None = None
    metadata: dict[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    callback_url: str | None = None
    idempotency_key: str | None = None
    request: JsonValue = None
    """What the key's request asked (its digest must match on a retry); None: the fields above."""
    title: str | None = None
    claims: dict[str, JsonValue] | None = None


@dataclass(frozen=True, slots=True)
class Started:
    """The run a start answers; `replayed` when an earlier start with the same key made it."""

    run: RunRecord
    replayed: bool = False


def keyed_ids(user_id: str, key: str) -> tuple[str, str]:
    """The run id and default conversation id of an idempotency key (the same for the same user and key)."""
    digest = hashlib.sha256(f"{user_id}\x00{key}".encode()).hexdigest()[:32]
    return f"run-{digest}", f"conv-{digest}"


def _request_digest(start: HeadlessStart) -> str:
    asked: JsonValue = start.request
    if asked is None:
        asked = {
            "agent": start.agent,
            "message": cast(JsonValue, start.message),
            "conversationId": start.conversation_id,
            "metadata": start.metadata,
            "callbackUrl": start.callback_url,
        }
    return hashlib.sha256(canonical_json(asked).encode()).hexdigest()


def start_headless(services: Services, user_id: str, start: HeadlessStart) -> Started:
    """Start the run (or find the one its idempotency key already started)."""
    digest = _request_digest(start)
    if start.idempotency_key is None:
        run_id, conversation_id = f"run-{uuid.uuid4().hex}", start.conversation_id or f"conv-{uuid.uuid4().hex}"
    else:
        run_id, default_conversation = keyed_ids(user_id, start.idempotency_key)
        conversation_id = start.conversation_id or default_conversation
        found = _existing(services, user_id, run_id, digest)
        if found is not None:
            return found
    unattended: dict[str, JsonValue] = {"trigger": start.trigger, "requestDigest": digest, "metadata": start.metadata}
    if start.callback_url is not None:
        unattended["callbackUrl"] = start.callback_url
    try:
        began = begin_turn(
            services,
            user_id,
            conversation_id=conversation_id,
            run_id=run_id,
            assistant_message_id=f"msg-{uuid.uuid4().hex}",
            user_message=start.message,
            title=start.title,
            agent=start.agent,
            claims=start.claims,
            body={"metadata": start.metadata},
            unattended=unattended,
            admit=True,
        )
    except Conflict:
        if start.idempotency_key is not None:  # a start racing with the same key: the run it wrote
            found = _existing(services, user_id, run_id, digest)
            if found is not None:
                return found
        raise
    return Started(began.run)


def _existing(services: Services, user_id: str, run_id: str, digest: str) -> Started | None:
    try:
        run = services.store.get_run(user_id, run_id)
    except NotFound:
        return None
    if unattended_of(run).get("requestDigest") != digest:
        raise IdempotencyMismatch("Idempotency-Key: this key was used with a different request")
    return Started(run, replayed=True)


def unattended_of(run: RunRecord) -> dict[str, JsonValue]:
    """What a headless start recorded on the run (`trigger`, `callbackUrl`, `metadata`); {} for a chat run."""
    value = (run.context or {}).get("unattended")
    return cast(dict[str, JsonValue], value) if isinstance(value, dict) else {}
