"""Lambda SnapStart for the worker functions: what goes into the snapshot, what is redone after a restore.

With SnapStart (template.yaml's `SnapStart` parameter; the function then has `STEPLINE_SNAPSTART=1`)
Lambda runs the function's init once per published version, snapshots the memory, and starts new
environments from that snapshot. So the init should do all the work that is the same everywhere
and nothing that must differ between environments or stay fresh:

- before the snapshot (`prime`): import what the first invocation would import — the agents and
  their tools, the configured provider's SDK (the model step), botocore's client machinery (a
  client of each service is made and dropped). No secret is read, no client kept, no connection
  opened: the API key, the approval-link key and the boto3 clients are built on the first
  invocation after a restore, as without SnapStart.
- after each restore (`after_restore`): drop what could have been made before the snapshot and
  must not be shared — the cached services and their boto3 clients (their connection pools would
  hold sockets of the environment the snapshot was taken in), boto3's default session (it caches
  the credentials it resolved; a restored environment has its own), the Event API notifiers'
  connections and credentials, and the state of `random` (reseeded from the OS: every environment
  restored from one snapshot would otherwise draw the same numbers). Ids come from `uuid.uuid4()`
  and `secrets`, which read `os.urandom` at every call, so they need nothing.

The hooks come from `snapshot_restore_py`, which the Lambda Python runtime provides; where it is
not installed (locally, in tests) nothing is registered.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

__all__ = ["after_restore", "install", "prime"]

_LOG = logging.getLogger(__name__)

PRIMED_CLIENTS = ("dynamodb", "s3", "stepfunctions", "events", "ssm", "secretsmanager")
"""The boto3 clients the workers make; making one imports and loads what the first call needs."""


def prime(model_specs: Callable[[], list[str]], *, with_model: bool) -> None:
    """Import before the snapshot what the first invocation would (never a secret, never a client kept)."""
    import boto3

    from ..llm.registry import import_provider

    specs = model_specs()  # loads the agents (their modules and tools)
    if with_model:
        for spec in specs:
            import_provider(spec)
    for name in PRIMED_CLIENTS:
        boto3.client(name)  # pyright: ignore[reportUnknownMemberType]
    boto3.DEFAULT_SESSION = None  # its credentials are resolved afresh after the restore


def after_restore(forget_services: Callable[[], None]) -> None:
    """Forget what was made before the snapshot and must differ per environment.

    `forget_services` drops the process's cached services (`services_from_env.cache_clear`).
    """
    import boto3

    from .appsync_auth import forget_credentials
    from .appsync_events import reset_notifiers

    forget_services()
    boto3.DEFAULT_SESSION = None
    forget_credentials()
    reset_notifiers()
    random.seed()


def install(before_snapshot: Callable[[], None], *, forget_services: Callable[[], None]) -> bool:
    """Register `before_snapshot` and `after_restore` with the runtime (False where there is none)."""
    try:
        from snapshot_restore_py import (  # pyright: ignore[reportMissingImports]
            register_after_restore,  # pyright: ignore[reportUnknownVariableType]
            register_before_snapshot,  # pyright: ignore[reportUnknownVariableType]
        )
    except ImportError:
        return False

    def guarded() -> None:
        try:
            before_snapshot()
        except Exception as error:  # priming is an optimisation: the first invocation imports instead
            _LOG.warning("priming before the snapshot failed (%s)", type(error).__name__)

    register_before_snapshot(guarded)
    register_after_restore(after_restore, forget_services)
    return True
