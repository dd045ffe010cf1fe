"""The stream of a queued message: silent (keep-alive only) until its run starts, then that run's.

A queued message's run has its id from the moment it was queued (`runtime.inbox`); the stream
waits for the run to exist. A message cancelled while it waited ends the stream with an `abort`
chunk (reason `queued_message_cancelled`): the stock client ends the request as aborted.
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

from ..protocol._json import dumps
from ..protocol.sse import DONE
from ..runtime.services import Services
from ..store.errors import NotFound
from .threads import RunSync

__all__ = ["CANCELLED", "cancelled_frames", "queued_run_started"]

CANCELLED: Final = "queued_message_cancelled"


def _state(services: Services, user_id: str, conversation_id: str, run_id: str, message_id: str) -> str:
    """`started`, `waiting` or `cancelled`."""
    store = services.store
    try:
        store.get_run(user_id, run_id)
        return "started"
    except NotFound:
        pass
    try:
        inbox = store.get_conversation(user_id, conversation_id).inbox
    except NotFound:
        return "cancelled"
    if any(e.message_id == message_id for e in inbox):
        return "waiting"
    try:  # taken out of the inbox by the start of its turn, which may have just committed
        store.get_run(user_id, run_id)
        return "started"
    except NotFound:
        return "cancelled"


async def queued_run_started(
    services: Services,
    user_id: str,
    conversation_id: str,
    run_id: str,
    message_id: str,
    threads: RunSync,
    *,
    poll_seconds: float,
    max_seconds: float,
) -> bool | None:
    """True once the run started; False when the message was cancelled; None at `max_seconds`."""
    deadline = time.monotonic() + max_seconds
    interval = min(poll_seconds, 0.1)
    while time.monotonic() < deadline:
        state = await threads(lambda: _state(services, user_id, conversation_id, run_id, message_id))
        if state != "waiting":
            return state == "started"
        await asyncio.sleep(interval)
        interval = min(interval * 2, max(poll_seconds, 0.5))
    return None


def cancelled_frames() -> list[str]:
    """What a cancelled queued message's stream ends with."""
    return [f"data: {dumps({'type': 'abort', 'reason': CANCELLED})}\n\n", DONE]
