"""Who watches a run: its streams note themselves, and its model step picks the delta window by it.

A run's text costs one event-log write per delta window (`stepline.store.event_batcher`): 100 ms
in a run started from a chat, 1 s in one that no chat started. A chat's run is not always watched,
though: its page was closed, or it is a sub-agent's run, whose deltas never reach the lead's
stream (the lead's message shows its progress at its step ends, `runtime.child_stream`). So every
stream that follows a run notes it (`Watchers.note`, at its start and then every `NOTE_SECONDS`; a
note counts for `NOTE_TTL_SECONDS`), and the model step, which reads the run every second for an
abort anyway, reads the note too and sets its window (`window_of`):

- a note that still counts: the chat's window;
- a note that has expired (its watchers left): the unattended window;
- no note yet: the chat's window in a top-level run (its chat's stream may not have noted itself
  yet), the unattended window in a sub-agent's run (nobody streams one unless they open it, which
  notes).

A run no chat started keeps the unattended window whoever watches. A watcher who arrives gets the
chat's window within a second (the next read), and in either window every part's first delta is
written at once, so the time to first token does not depend on it.

The window also picks the function of the run's next step: a step whose window was the unattended
one replies `watched: false`, and the ASL's Route sends the next step to the model step function
with less memory (`handling.SAME_HANDLER`): nobody waits for its deltas.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Final, Protocol

from ..store.records import RunRecord

__all__ = [
    "NOTE_SECONDS",
    "NOTE_TTL_SECONDS",
    "MemoryWatchers",
    "Watchers",
    "WindowSettings",
    "delta_window_of",
    "noter",
    "window_of",
]

_LOG = logging.getLogger("stepline.runtime")

NOTE_SECONDS: Final = 10.0
"""A stream notes itself this often while it follows a run."""

NOTE_TTL_SECONDS: Final = 30.0
"""A note counts this long: a stream that ended (or was cut) stops counting within it."""


class Watchers(Protocol):
    """Where streams note that they follow a run (a DynamoDB item on AWS, `aws.dynamo_watchers`)."""

    def note(self, user_id: str, run_id: str, *, until_ms: int) -> None:
        """Someone follows the run until `until_ms` (epoch ms) at least."""
        ...

    def watched_until(self, user_id: str, run_id: str) -> int | None:
        """Until when the run's last note counts (epoch ms); None if no stream ever noted it."""
        ...


class MemoryWatchers:
    """The notes of one process (`stepline dev`, where every stream and step is in one process)."""

    def __init__(self) -> None:
        self._until: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def note(self, user_id: str, run_id: str, *, until_ms: int) -> None:
        with self._lock:
            key = (user_id, run_id)
            self._until[key] = max(until_ms, self._until.get(key, 0))

    def watched_until(self, user_id: str, run_id: str) -> int | None:
        with self._lock:
            return self._until.get((user_id, run_id))


class WindowSettings(Protocol):
    """What the window depends on in `Services` (typed here without importing it: it imports this)."""

    @property
    def watchers(self) -> Watchers | None: ...
    @property
    def delta_window(self) -> float: ...
    @property
    def unattended_delta_window(self) -> float: ...
    @property
    def clock(self) -> Callable[[], int]: ...


def window_of(
    run: RunRecord, watched_until: int | None, *, now_ms: int, chat_window: float, unattended_window: float
) -> float:
    """The run's delta window now, from its last note (`watched_until`; None: never noted)."""
    if run.trigger == "automation":
        return unattended_window
    if watched_until is None:  # a sub-agent's run carries its parent's link (`runtime.children`)
        return unattended_window if isinstance((run.context or {}).get("parent"), dict) else chat_window
    return chat_window if watched_until > now_ms else unattended_window


def delta_window_of(services: WindowSettings, run: RunRecord) -> float:
    """The run's delta window now (one read of its note); without `services.watchers`, by its trigger only.

    A note that cannot be read counts as none: the window is a cost, and the step goes on.
    """
    chat, unattended = services.delta_window, services.unattended_delta_window
    if services.watchers is None:
        return unattended if run.trigger == "automation" else chat
    try:
        until = services.watchers.watched_until(run.user_id, run.run_id)
    except Exception:
        _LOG.warning("could not read who follows run %s", run.run_id, exc_info=True)
        until = None
    return window_of(run, until, now_ms=services.clock(), chat_window=chat, unattended_window=unattended)


def noter(services: WindowSettings, user_id: str, run_id: str) -> Callable[[], None] | None:
    """What a stream calls to note that it follows the run (None without `services.watchers`)."""
    watchers = services.watchers
    if watchers is None:
        return None
    return lambda: watchers.note(user_id, run_id, until_ms=services.clock() + int(NOTE_TTL_SECONDS * 1000))
