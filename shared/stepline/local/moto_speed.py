"""moto's Step Functions interpreter without the work it repeats on every execution and state.

Speed only: what the interpreter computes is unchanged. Measured on the path of a run's first token
(`StartExecution` to the model step's invocation; `bench/ttft.py`), moto spends most of its time on
three things it rebuilds each time, all pure Python holding the GIL that the streams need too:

- **the definition's parse**: its ANTLR grammar parses the whole definition at the start of every
  execution (about 30 ms for template.yaml's ASL). Each definition is parsed once; every
  execution runs a deep copy of the parsed program of its own (about 2 ms), which is what a fresh
  parse would have built, and the cached one is never evaluated.
- **a boto3 client per task**: every Lambda invocation and `states:startExecution` task creates a
  new client (copying the session's event handlers, loading the service model: 3 ms idle, tens of
  ms on a loaded machine). The client is kept per service and region; boto3's clients are thread
  safe, moto's own endpoint routing (its botocore stubber) is consulted per request, and the
  credentials are moto's fixed ones whatever the state's.
- **a JSONPath parser per path**: each `$.runId` of a `Parameters` or `ResultPath` builds a new
  jsonpath-ng (PLY) parser. A parsed path is an immutable expression; they are kept by text.
"""

from __future__ import annotations

import copy
import functools
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["install_sfn_speedups"]

_installed = False
_lock = threading.Lock()


def install_sfn_speedups() -> None:
    """Install the three caches (idempotent; call before the first execution)."""
    global _installed
    with _lock:
        if _installed:
            return
        _cache_parse()
        _cache_clients()
        _cache_json_paths()
        _installed = True


def _cache_parse() -> None:
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    parse: Callable[[Any], Any] = getattr(ExecutionWorker, "_get_evaluation_entrypoint")  # noqa: B009 - moto's hook
    parsed: dict[str, Any] = {}
    lock = threading.Lock()

    def entrypoint(self: Any) -> Any:
        definition: str = self._evaluation_details.state_machine_details.definition
        with lock:
            program = parsed.get(definition)
            if program is None:
                program = parsed[definition] = parse(self)
        return copy.deepcopy(program)

    ExecutionWorker._get_evaluation_entrypoint = entrypoint  # pyright: ignore[reportPrivateUsage]


def _cache_clients() -> None:
    from moto.core.models import botocore_stubber
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_sfn
    from moto.stepfunctions.parser.asl.utils import boto_client

    create: Callable[..., Any] = boto_client.boto_client_for

    @functools.cache
    def cached(region: str, service: str, intercepting: bool) -> Any:
        return create(region=region, service=service)

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        return cached(region, service, botocore_stubber.enabled)  # moto ignores the state's credentials too

    for module in (lambda_eval_utils, state_task_service_sfn):
        module.boto_client_for = boto_client_for  # pyright: ignore[reportAttributeAccessIssue]


def _cache_json_paths() -> None:
    from moto.stepfunctions.parser.asl.component.common.path import result_path
    from moto.stepfunctions.parser.asl.utils import json_path

    for module in (json_path, result_path):
        module.parse = functools.lru_cache(maxsize=1024)(module.parse)  # pyright: ignore[reportAttributeAccessIssue]
