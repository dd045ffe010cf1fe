"""Stepline's AWS backend on moto, in this process.

The tables and bucket of template.yaml, the real ASL on moto's Step Functions interpreter, and the
worker functions run in process.

This is what `stepline dev` serves and what the end-to-end tests run against: the same store
(`DynamoStore`), blob store (`S3BlobStore`) and orchestrator (`StepFunctionsOrchestrator`) as a
deployed stack, through boto3; only the AWS endpoints are moto's.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

from ..aws.dynamodb import DynamoStore
from ..aws.stepfunctions import StepFunctionsOrchestrator
from ..runtime.handlers import Handler, handlers
from ..runtime.notifications import InProcessNotifier
from ..runtime.services import Services
from .links import LocalLinkBlobStore
from .resources import create_bucket, create_tables
from .workflow import LocalWorkflow, install_lambda_router

__all__ = ["MOTO_CONFIG", "REGION", "TABLES", "LocalBackend", "SerializedWrites", "local_backend"]

REGION = "us-east-1"
TABLES = {"AgentTable": "stepline-agent", "EventsTable": "stepline-events"}
BUCKET = "stepline-local"
MOTO_CONFIG: Any = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
_WRITES = frozenset({"transact_write_items", "put_item", "update_item", "delete_item"})


class SerializedWrites:
    """Serialises moto's writes, as real DynamoDB does per item.

    moto checks a transaction's conditions and applies its writes without a lock, so two threads
    can both pass `rev = :rev` (seen: duplicated event seqs). Real DynamoDB serialises conflicting
    writes per item. This proxy restores that guarantee on moto by running its writes one at a
    time; the store's own logic is exercised unchanged (its reads stay concurrent).
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name not in _WRITES:
            return attribute

        def locked(**kwargs: Any) -> Any:
            with self._lock:
                return attribute(**kwargs)

        return locked


@dataclass
class LocalBackend:
    """The services on moto, and the workflow they run on."""

    services: Services
    workflow: LocalWorkflow
    routes: dict[str, Handler]
    dynamodb: Any


def _client(service: str) -> Any:
    import boto3

    return cast(Any, boto3.client(service, region_name=REGION))  # pyright: ignore[reportUnknownMemberType]


@contextmanager
def local_backend(
    make_services: Callable[..., Services],
    *,
    approval_timeout_seconds: int = 24 * 3600,
    wrap: Callable[[dict[str, Handler]], dict[str, Handler]] | None = None,
) -> Generator[LocalBackend]:
    """Start moto, create the resources, and yield the services built on them.

    `make_services(store=, blobs=, orchestrator=, approval_timeout_ms=)` builds the services;
    `wrap` lets tests intercept the worker handlers.
    """
    from moto import mock_aws

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):  # moto needs some; never real ones
        os.environ.setdefault(key, "local-moto")
    with mock_aws(config=MOTO_CONFIG):
        dynamodb = _client("dynamodb")
        create_tables(dynamodb, TABLES)
        s3 = _client("s3")
        create_bucket(s3, BUCKET)
        blobs = LocalLinkBlobStore(BUCKET, client=s3)
        store = DynamoStore(
            SerializedWrites(dynamodb),
            agent_table=TABLES["AgentTable"],
            events_table=TABLES["EventsTable"],
            blobs=blobs,
        )
        workflow = LocalWorkflow(region=REGION)
        orchestrator = StepFunctionsOrchestrator(
            _client("stepfunctions"),
            state_machine_arn=workflow.state_machine_arn,
            approval_timeout_seconds=approval_timeout_seconds,
        )
        services = make_services(
            store=store, blobs=blobs, orchestrator=orchestrator, approval_timeout_ms=approval_timeout_seconds * 1000
        )
        services.notifier = InProcessNotifier()  # the workers run in this process: they wake the streams
        routes = handlers(lambda: services)
        install_lambda_router(wrap(routes) if wrap else routes)
        yield LocalBackend(services, workflow, routes, dynamodb)
