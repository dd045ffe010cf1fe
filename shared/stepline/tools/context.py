"""What a tool knows about the run it serves: whose it is, where it writes, and the ports to do it.

The run context is fixed when the run starts: the user, the authorizer's claims, the chat
request's extra `body` fields (what `DefaultChatTransport`'s `body` option sends) and the
conversation are stored with the run, and every later step, tool, callback and dynamic
`instructions` of that run sees the same values, in whichever process and however much later it
runs (an approval answered the next day). The worker rebuilds one `RunContext` per model step from
the run record (the ports are the process's own) and hands it to the loop as `runtime_context`.
A `@tool` parameter annotated `RunContext` receives it; a `tool(...)` executor that takes a second
argument reads it as `context.runtime_context`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import JsonValue

from ..store.blobs import BlobStore
from ..store.ports import Store

__all__ = ["RunContext"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext:
    """The run a tool call belongs to.

    Attributes:
        user_id: The owner; every key a tool touches starts from this user's scope.
        conversation_id: The conversation (its workspace is the tool's file system).
        run_id: The run making the call.
        message_id: The assistant message the run is writing (artifacts attach to it).
        store: The durable store.
        blobs: Object storage for workspace files and artifacts; None when the process has none.
        claims: The caller's identity claims when the run started (the API Gateway authorizer's,
            or `{"sub": user}` locally); never secrets, but treat them as personal data.
        body: The chat request's fields beyond `id`, `messages`, `trigger` and `messageId`.
        agent: The name of the agent running the run.
    """

    user_id: str
    conversation_id: str
    run_id: str
    message_id: str
    store: Store
    blobs: BlobStore | None = None
    claims: Mapping[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    body: Mapping[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    agent: str = "agent"
