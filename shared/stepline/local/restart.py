"""Driving the unfinished runs again when `stepline dev` starts over a data folder.

The store outlives the process; moto's executions do not. So on start every run that is not
terminal gets a new execution of the same state machine, named by its run id as the first one was,
whose first ModelStep picks the run up where its records say it is — the worker's own recovery,
the same as after a Lambda crash on AWS:

- a run that was working continues from its last checkpoint: a step cut by the stop is redone
  (its streamed parts dropped with `reset-step`), a tool that completed is never run again (its
  claim is stored), one cut after it started is reported as interrupted, not re-run;
- a run waiting for an approval or an answer goes straight back to AwaitInput, whose new task
  token the webhook and the chat continuation resume; the wait ends at the deadline stored with
  the approval (or the question's checkpoint), not a fresh one (`waits.wait_seconds`);
- a run whose decision was taken but not yet acted on continues with it.
"""

from __future__ import annotations

import fcntl
import logging
import threading
from pathlib import Path
from typing import IO, Protocol

from ..errors import StepLineError
from ..runtime.executions import Executions
from ..runtime.reconcile import sweep
from ..runtime.services import Services
from ..runtime.waits import run_state
from ..store.records import TERMINAL

__all__ = ["DataDirInUse", "Driver", "Sweeper", "lock_data_dir", "redrive_unfinished"]

_LOG = logging.getLogger("stepline.local")
_ALL = 1_000_000


class Driver(Executions, Protocol):
    """What starts a run's execution and looks it up: either engine of `stepline.local.backend`."""

    def start_run(self, user_id: str, run_id: str, *, first_step: int = 0) -> None: ...


def redrive_unfinished(services: Services, orchestrator: Driver) -> int:
    """Start an execution for every run that is not terminal; returns how many were started."""
    store = services.store
    started = 0
    for user_id, run_id in store.stale_runs(heartbeat_before=2**62, limit=_ALL):
        run = store.get_run(user_id, run_id)
        if run.status in TERMINAL["run"]:
            continue
        steps = run_state(services, user_id, run_id).step_number
        orchestrator.start_run(user_id, run_id, first_step=steps)
        _LOG.info("run %s (%s) driven again from step %d", run_id, run.status, steps)
        started += 1
    return started


class DataDirInUse(StepLineError):
    """Another process serves this data folder (two would both drive its runs)."""


def lock_data_dir(data_dir: Path) -> IO[str]:
    """Hold the folder's lock for as long as the returned file stays open (the OS frees it on exit)."""
    handle = (data_dir / "lock").open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise DataDirInUse(f"{data_dir} is in use by another stepline dev; stop it, or use --data DIR") from None
    return handle


class Sweeper:
    """The reconciler's sweep every `interval` seconds, in a daemon thread (AWS schedules it)."""

    def __init__(self, services: Services, orchestrator: Driver, *, interval: float = 60.0) -> None:
        self._services = services
        self._orchestrator = orchestrator
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="stepline-sweeper", daemon=True)

    def start(self) -> Sweeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                for closed in sweep(self._services, self._orchestrator):
                    if closed.outcome == "closed":
                        _LOG.warning("run %s had no live execution: closed as %s", closed.run_id, closed.status)
            except Exception:  # a failed sweep is retried at the next interval
                _LOG.exception("the reconciler's sweep failed")
