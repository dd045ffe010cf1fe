"""What `stepline dev` adds for unattended runs: printed events, callbacks, the scheduler, dev routes.

Read from the environment:

    STEPLINE_CALLBACK_SECRET   the key callbacks are signed with (base64, optionally `whsec_...`);
                               unset: `POST /api/runs` refuses a `callbackUrl`
    STEPLINE_CALLBACK_ALLOWED_NETWORKS   private ranges callbacks may reach (`10.0.0.0/8,...`);
                               loopback (a receiver on this machine) is always allowed here
    STEPLINE_CALLBACK_BACKOFF_SECONDS    the first retry's wait (default 2; doubled each time)
    STEPLINE_HOOK_SECRET_<AGENT>_<HOOK>  each inbound webhook's secret (base64)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..runtime.callback_urls import UrlPolicy, parse_networks
from ..runtime.headless import unattended_of
from ..runtime.hook_signatures import check_secret
from ..runtime.notifications import RunEvent
from ..runtime.services import Services
from ..store.errors import NotFound
from .callbacks import Outbox
from .dev_events import DevNotifier, dev_events_router
from .scheduler import FileScheduleState, LocalScheduler, schedules_router

__all__ = ["DevUnattended"]


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class DevUnattended:
    """The dev server's unattended parts (built before the services, installed after the app)."""

    notifier: DevNotifier
    outbox: Outbox
    policy: UrlPolicy
    state: FileScheduleState
    callbacks_on: bool
    scheduler: LocalScheduler | None = None
    _services: list[Services] = field(default_factory=list[Services])

    @classmethod
    def from_env(cls, env: Mapping[str, str], data_dir: Path | None, out: TextIO | None = None) -> DevUnattended:
        """Raises `ValueError` naming the variable that is not usable."""
        secret = env.get("STEPLINE_CALLBACK_SECRET", "").strip() or None
        if secret is not None:
            check_secret(secret, "STEPLINE_CALLBACK_SECRET")
        try:
            networks = parse_networks(env.get("STEPLINE_CALLBACK_ALLOWED_NETWORKS", ""))
        except ValueError as error:
            raise ValueError(f"STEPLINE_CALLBACK_ALLOWED_NETWORKS: {error}") from None
        backoff = env.get("STEPLINE_CALLBACK_BACKOFF_SECONDS", "2").strip()
        try:
            base = float(backoff)
            if not 0 < base <= 3600:
                raise ValueError
        except ValueError:
            raise ValueError("STEPLINE_CALLBACK_BACKOFF_SECONDS must be a number of seconds in (0, 3600]") from None
        policy = UrlPolicy(allow_loopback=True, allowed_networks=networks)
        outbox = Outbox(
            None if data_dir is None else data_dir / "callbacks.db", secret, policy, _now_ms, backoff_base=base
        )
        state = FileScheduleState(None if data_dir is None else data_dir / "schedules.json")
        notifier = DevNotifier(out=out or sys.stdout)
        return cls(notifier, outbox, policy, state, callbacks_on=secret is not None)

    def install(self, app: Any, services: Services) -> None:
        """Mount the dev routes, forward events to the outbox, start the sender and the scheduler."""
        self._services.append(services)
        self.notifier.forward = self._forward
        self.outbox.services = services
        app.include_router(dev_events_router(self.notifier))
        app.include_router(schedules_router())
        self.outbox.start()
        self.scheduler = LocalScheduler(services, self.state, services.clock).start()

    def _forward(self, event: RunEvent) -> None:
        services = self._services[0]
        try:
            run = services.store.get_run(str(event.detail["userId"]), str(event.detail["runId"]))
        except NotFound:
            return
        url = unattended_of(run).get("callbackUrl")
        if isinstance(url, str):
            self.outbox.enqueue(event, url)

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
        self.outbox.stop()

    def describe(self) -> list[str]:
        schedules = self.scheduler.count if self.scheduler is not None else 0
        callbacks = (
            "signed with STEPLINE_CALLBACK_SECRET" if self.callbacks_on else "off (set STEPLINE_CALLBACK_SECRET)"
        )
        return [
            f"  unattended  POST /api/runs; {schedules} schedule{'s' if schedules != 1 else ''}; callbacks {callbacks}",
            "           lifecycle events: one line each below (approvals with their link), GET /api/dev/events",
        ]
