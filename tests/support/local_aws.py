"""A whole Stepline backend on moto: tables and bucket from template.yaml, the real ASL, in-process handlers."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from stepline.llm.base import LanguageModel
from stepline.local.backend import local_backend
from stepline.local.workflow import LocalWorkflow
from stepline.loop.tools import Tool
from stepline.runtime.handling import Handler
from stepline.runtime.services import Services
from stepline.store.records import RunRecord


@dataclass
class LocalAws:
    services: Services
    workflow: LocalWorkflow
    routes: dict[str, Handler]

    def wait_run(
        self, user_id: str, run_id: str, until: Callable[[RunRecord], bool], timeout: float = 60.0
    ) -> RunRecord:
        deadline = time.monotonic() + timeout
        while True:
            run = self.services.store.get_run(user_id, run_id)
            if until(run):
                return run
            if time.monotonic() > deadline:
                raise AssertionError(f"run {run_id} stuck in {run.status}; execution {self.workflow.status(run_id)}")
            time.sleep(0.02)

    def wait_execution(self, run_id: str, timeout: float = 60.0, generation: int = 0) -> str:
        deadline = time.monotonic() + timeout
        while (status := self.workflow.status(run_id, generation)) == "RUNNING":
            if time.monotonic() > deadline:
                raise AssertionError(f"execution {run_id} still running")
            time.sleep(0.02)
        return status


@contextmanager
def local_aws(
    model: LanguageModel,
    *,
    tools: list[Tool] | None = None,
    approval_timeout_seconds: int = 3600,
    wrap: Callable[[dict[str, Handler]], dict[str, Handler]] | None = None,
    **service_options: Any,
) -> Generator[LocalAws]:
    """`stepline dev`'s backend (`stepline.local.backend`) with this model, tools and service options."""

    def make_services(**backend: Any) -> Services:
        return Services(model=model, tools=tools or [], **{**backend, **service_options})

    with local_backend(make_services, approval_timeout_seconds=approval_timeout_seconds, wrap=wrap) as backend:
        yield LocalAws(backend.services, backend.workflow, backend.routes)
