"""What a tool knows about the run it serves: whose it is, where it writes, and the ports to do it.

The worker builds one `RunContext` per model step from the run record and hands it to the loop
as `runtime_context`; an executor that takes a second argument reads it as
`context.runtime_context` (a `stepline.loop.tools.ToolContext`). In process (`stepline run`)
there is none, and tools that need one say so instead of failing the loop.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    """

    user_id: str
    conversation_id: str
    run_id: str
    message_id: str
    store: Store
    blobs: BlobStore | None = None
