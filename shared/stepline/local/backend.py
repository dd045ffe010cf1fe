"""Stepline's AWS backend on moto, in this process.

The real ASL on moto's Step Functions interpreter and the worker functions in process, over one of
two storages:

- **in memory** (`data_dir=None`): the tables and bucket of template.yaml on moto. The same store
  (`DynamoStore`), blob store (`S3BlobStore`) and orchestrator (`StepFunctionsOrchestrator`) as a
  deployed stack, through boto3; only the AWS endpoints are moto's. Gone when the process ends.
  The end-to-end tests and `stepline dev --memory` run this.
- **a data folder** (`data_dir`): the store in `stepline.db` (`SqliteStore`) and the objects under
  `blobs/` (`FileBlobStore`), so conversations, runs and waiting approvals outlive the process.
  moto's executions do not: on start, every run that is not terminal is driven again
  (`stepline.local.restart`). `stepline dev` runs this by default.

and one of two engines for the state machine (`engine`):

- **moto** (the default here): moto's Step Functions interpreter, with its execution history; the
  tests of the ASL run on it. It holds threads for every live execution, waiting ones included.
- **local** (`stepline dev`): `stepline.local.engine`, the same ASL file run on a small pool of
  worker threads, where a run that waits for a person holds none.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, cast

from ..aws.dynamodb import DynamoStore
from ..aws.s3 import S3BlobStore
from ..aws.stepfunctions import StepFunctionsOrchestrator
from ..runtime.handlers import handlers
from ..runtime.handling import Handler
from ..runtime.services import Services
from ..runtime.stream_push import InProcessNotifier
from ..runtime.working_runs import run_tenant
from ..store.files import FileBlobStore
from ..store.ports import Store
from ..store.sqlite import SqliteStore
from .engine import LocalStepFunctions
from .links import LocalLinkBlobStore
from .moto_memory import untrack_dynamodb_models
from .resources import create_bucket, create_tables
from .restart import lock_data_dir, redrive_unfinished
from .workers import Owner
from .workflow import LocalWorkflow

__all__ = [
    "DATABASE",
    "MOTO_CONFIG",
    "Engine",
    "REGION",
    "TABLES",
    "LocalBackend",
    "SerializedCalls",
    "local_backend",
]

REGION = "us-east-1"
TABLES = {"AgentTable": "stepline-agent", "EventsTable": "stepline-events"}
BUCKET = "stepline-local"
MOTO_CONFIG: Any = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
_UNLOCKED = frozenset({"exceptions", "meta"})
Engine = Literal["moto", "local"]
DATABASE = "stepline.db"
"""The store's file in a data folder (the objects are under `blobs/` beside it)."""


class SerializedCalls:
    """Serialises every call to moto's DynamoDB, as real DynamoDB serialises writes per item.

    moto checks a transaction's conditions and applies its writes without a lock, so two threads
    can both pass `rev = :rev` (seen: duplicated event seqs). Its reads are not safe beside a write
    either: a `GetItem` of a missing item inserts an empty partition into the table's dict, and a
    `TransactWriteItems` deep-copies that dict meanwhile (seen under 50 concurrent chats: "dictionary
    changed size during iteration", a 500 from `POST /api/chat`). So this proxy runs one call at a
    time; the store's own logic is exercised unchanged.
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name in _UNLOCKED or not callable(attribute):
            return attribute

        def locked(**kwargs: Any) -> Any:
            with self._lock:
                return attribute(**kwargs)

        return locked


@dataclass
class LocalBackend:
    """The services on moto, and the workflow they run on."""

    services: Services
    workflow: LocalWorkflow | None
    """moto's state machine (the moto engine); None with the local engine."""
    routes: dict[str, Handler]
    dynamodb: Any
    """moto's DynamoDB client in memory; None over a data folder."""
    data_dir: Path | None = None
    redriven: int = 0
    """How many unfinished runs were driven again on start (a data folder only)."""
    orchestrator: StepFunctionsOrchestrator | LocalStepFunctions | None = None


def _client(service: str) -> Any:
    import boto3

    return cast(Any, boto3.client(service, region_name=REGION))  # pyright: ignore[reportUnknownMemberType]


@contextmanager
def local_backend(
    make_services: Callable[..., Services],
    *,
    approval_timeout_seconds: int = 24 * 3600,
    wrap: Callable[[dict[str, Handler]], dict[str, Handler]] | None = None,
    data_dir: Path | None = None,
    engine: Engine = "moto",
) -> Generator[LocalBackend]:
    """Start moto, create the resources, and yield the services built on them.

    `make_services(store=, blobs=, orchestrator=, approval_timeout_ms=)` builds the services;
    `wrap` lets tests intercept the worker handlers; `data_dir` keeps the store and the objects in
    that folder (created if missing) instead of moto's memory; `engine` runs the state machine
    (see the module docstring).
    """
    from moto import mock_aws

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):  # moto needs some; never real ones
        os.environ.setdefault(key, "local-moto")
    with mock_aws(config=MOTO_CONFIG):
        dynamodb: Any = None
        lock: IO[str] | None = None
        store: Store
        if data_dir is None:
            dynamodb = _client("dynamodb")
            untrack_dynamodb_models()  # else every transaction's rollback copy lives forever
            create_tables(dynamodb, TABLES)
            s3 = _client("s3")
            create_bucket(s3, BUCKET)
            blobs = LocalLinkBlobStore(S3BlobStore(BUCKET, client=s3))
            store = DynamoStore(
                SerializedCalls(dynamodb),
                agent_table=TABLES["AgentTable"],
                events_table=TABLES["EventsTable"],
                blobs=blobs,
            )
        else:
            data_dir.mkdir(parents=True, exist_ok=True)
            lock = lock_data_dir(data_dir)
            blobs = LocalLinkBlobStore(FileBlobStore(data_dir / "blobs"))
            store = SqliteStore(data_dir / DATABASE)
            store.purge_expired(now=int(time.time() * 1000))  # TTL's work, once per start
        workflow: LocalWorkflow | None = None
        routes: dict[str, Handler] = {}
        invoked: dict[str, Handler] = {}  # what the engine calls: the handlers, wrapped for tests
        orchestrator: StepFunctionsOrchestrator | LocalStepFunctions
        if engine == "local":
            orchestrator = LocalStepFunctions(
                invoked,
                approval_timeout_seconds=approval_timeout_seconds,
                owner_of=lambda user_id, run_id: Owner(run_tenant(services, user_id, run_id), user_id),
            )
        else:
            workflow = LocalWorkflow(invoked, region=REGION)
            orchestrator = StepFunctionsOrchestrator(
                _client("stepfunctions"),
                state_machine_arn=workflow.state_machine_arn,
                approval_timeout_seconds=approval_timeout_seconds,
            )
        services = make_services(
            store=store, blobs=blobs, orchestrator=orchestrator, approval_timeout_ms=approval_timeout_seconds * 1000
        )
        if services.stream_push is None:  # the workers run in this process: they wake the streams
            services.stream_push = InProcessNotifier()
        routes.update(handlers(lambda: services))
        invoked.update(wrap(routes) if wrap else routes)
        redriven = redrive_unfinished(services, orchestrator) if data_dir is not None else 0
        try:
            yield LocalBackend(services, workflow, routes, dynamodb, data_dir, redriven, orchestrator)
        finally:
            if isinstance(orchestrator, LocalStepFunctions):
                # In memory a cut step is lost, and a step still running after moto's mock would
                # reach the next backend's (moto's state is the process's): let it finish first.
                orchestrator.close(wait=10.0 if data_dir is None else 0.0)
            if workflow is not None:
                workflow.close()
            if isinstance(store, SqliteStore):
                store.close()
            if lock is not None:
                lock.close()
