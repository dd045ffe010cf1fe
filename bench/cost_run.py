"""What bench/cost.py observes of one run besides DynamoDB: Lambda, HTTP, Event API, S3, transitions."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

from bench.cost_meter import DynamoMeter, Usage, metering
from bench.cost_prices import Bill
from bench.cpu_share import share_of
from stepline.local.workflow import LocalWorkflow
from stepline.runtime.handling import Handler, logical_name
from stepline.runtime.stream_push import InProcessNotifier

__all__ = ["CountingNotifier", "CpuTimedClient", "Observed", "serving", "wrap_timed"]


class CountingNotifier(InProcessNotifier):
    """The in-process notifier, counting what the Event API would bill: a publish per notification,
    a delivery per stream subscribed when it is sent."""

    def __init__(self) -> None:
        super().__init__()
        self.publishes = 0
        self.deliveries = 0

    def notify(self, user_id: str, run_id: str, seq: int) -> None:
        self.publishes += 1
        self.deliveries += self.subscribers(user_id, run_id)
        super().notify(user_id, run_id, seq)


BILLED_DYNAMODB = frozenset(
    {
        "GetItem",
        "BatchGetItem",
        "Query",
        "Scan",
        "TransactGetItems",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchWriteItem",
        "TransactWriteItems",
        "ExecuteStatement",
        "BatchExecuteStatement",
        "ExecuteTransaction",
    }
)
"""DynamoDB's data-plane operations, each billed in request units (creating the tables is not)."""


class Observed:
    """Everything counted of a run outside the DynamoDB meter."""

    def __init__(self) -> None:
        self.notifier = CountingNotifier()
        self.invocations: list[tuple[str, float]] = []
        """(function logical id, seconds) per Lambda invocation."""
        self.cpu: dict[str, list[float]] = {}
        """Per function: [wall seconds, CPU seconds of the handler's thread, of which inside store calls]."""
        self.store_cpu: defaultdict[int, float] = defaultdict(float)
        """CPU seconds inside DynamoDB client calls, by thread (moto's work: network waits on AWS)."""
        self.api_requests = 0
        self.stream_seconds = 0.0
        self.s3: Counter[str] = Counter()
        self.unmetered_dynamodb: Counter[str] = Counter()
        """Billed DynamoDB requests that went around the meter, by operation (none in a sound run)."""
        self.wait_usage = Usage()
        """What the sampled wait added (counted and scaled), apart from the rest of the run."""
        self.wait_operations = 0
        self.first_model_call: dict[int, tuple[float, float]] = {}
        """Per thread: its CPU seconds and those inside DynamoDB calls when the model was first called."""
        self.before_model: list[float] = []
        """Per model step invocation: its CPU seconds outside DynamoDB calls before the model call."""
        self._lock = threading.Lock()

    def model_called(self) -> None:
        """The model is called (a model step's work before its first token ends here)."""
        thread = threading.get_ident()
        self.first_model_call.setdefault(thread, (time.thread_time(), self.store_cpu[thread]))

    def invoked(self, function: str, seconds: float) -> None:
        with self._lock:
            self.invocations.append((function, seconds))

    def used_cpu(self, function: str, wall: float, cpu: float, in_store: float) -> None:
        with self._lock:
            totals = self.cpu.setdefault(function, [0.0, 0.0, 0.0])
            totals[0] += wall
            totals[1] += cpu
            totals[2] += in_store

    @contextmanager
    def api_hook(self) -> Generator[None]:
        """Count the S3 requests of every client, and the DynamoDB ones no meter saw (botocore's API
        call, patched for the duration).

        Not a hook on boto3's default session: `mock_aws` swaps that session for its own, so the
        clients the backend creates would not see it (the S3 requests were counted as 0)."""
        from botocore.client import BaseClient

        original: Any = getattr(BaseClient, "_make_api_call")  # noqa: B009 - botocore's one entry for every call
        s3, unmetered = self.s3, self.unmetered_dynamodb

        def counted(client: Any, operation: str, params: Any) -> Any:
            service = client.meta.service_model.service_name
            if service == "s3":
                s3[operation] += 1
            elif service == "dynamodb" and operation in BILLED_DYNAMODB and not metering():
                unmetered[operation] += 1
            return original(client, operation, params)

        setattr(BaseClient, "_make_api_call", counted)  # noqa: B010 - the bench's meter on every client
        try:
            yield
        finally:
            setattr(BaseClient, "_make_api_call", original)  # noqa: B010

    def request(self, client: httpx.Client, function: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One HTTP request through API Gateway to `function`, billed for as long as it took."""
        started = time.monotonic()
        response = client.request(method, path, **kwargs)
        seconds = time.monotonic() - started
        if response.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")
        self.api_requests += 1
        self.invoked(function, seconds)
        if function == "StreamFunction":
            self.stream_seconds += seconds
        return response

    def sample_wait(self, meter: DynamoMeter, sample: float, total: float) -> None:
        """Count `sample` seconds of a wait and bill the rest of `total` seconds at the same rate."""
        before = meter.reset()
        publishes, deliveries = self.notifier.publishes, self.notifier.deliveries
        time.sleep(sample)
        factor = total / sample - 1
        during = meter.reset()
        meter.usage.add(before)
        self.wait_usage.add(during)
        self.wait_usage.add(during.scaled(factor))
        ops = (self.notifier.publishes - publishes) + (self.notifier.deliveries - deliveries)
        self.wait_operations += round(ops * factor)

    def wait_finished(self, workflow: LocalWorkflow, run_id: str, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while any(status == "RUNNING" for status in self._statuses(workflow, run_id)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"execution of {run_id} still running")
            time.sleep(0.05)

    @staticmethod
    def _statuses(workflow: LocalWorkflow, run_id: str) -> list[str]:
        statuses: list[str] = []
        while True:
            try:
                statuses.append(workflow.status(run_id, len(statuses)))
            except Exception:  # no such generation: the run did not continue as new again
                return statuses

    @staticmethod
    def transitions(workflow: LocalWorkflow, run_id: str) -> int:
        entered = 0
        for generation in range(len(Observed._statuses(workflow, run_id))):
            entered += sum(1 for e in workflow.history(run_id, generation) if e["type"].endswith("StateEntered"))
        return entered

    def bill(self, usage: Usage, workflow: LocalWorkflow | None, run_id: str, memory: Mapping[str, float]) -> Bill:
        assert workflow is not None
        by: dict[str, float] = {}
        for function, seconds in self.invocations:
            by[function] = by.get(function, 0.0) + memory[function] * seconds
        for function, (_, cpu, in_store) in self.cpu.items():  # the CPU here ran on a whole core
            if function in by:
                by[function] += memory[function] * stretched(cpu - in_store, memory[function])
        return Bill(
            transitions=self.transitions(workflow, run_id),
            lambda_requests=len(self.invocations),
            gb_seconds=sum(by.values()),
            gb_seconds_by=by,
            write_units=usage.write_units,
            write_units_by=usage.write_units_by,
            dynamodb_requests=usage.requests,
            index_write_units=usage.index_write_units,
            read_units=usage.read_units,
            api_requests=self.api_requests,
            event_operations=self.notifier.publishes + self.notifier.deliveries + self.wait_operations,
            event_connection_minutes=self.stream_seconds / 60,
            s3_puts=sum(n for op, n in self.s3.items() if op in ("PutObject", "CopyObject", "ListObjectsV2")),
            wait=self.wait_usage,
            s3_gets=sum(n for op, n in self.s3.items() if op in ("GetObject", "HeadObject")),
            cpu_by={name: list(totals) for name, totals in self.cpu.items()},
        )


try:
    from stepline.runtime.handling import SAME_HANDLER
except ImportError:  # a checkout from before the unwatched model step (--also): every function its own handler
    SAME_HANDLER: dict[str, str] = {}


def stretched(cpu_seconds: float, memory_gb: float) -> float:
    """The seconds `cpu_seconds` of one core's work add to a function's duration at its CPU share.

    The share is `bench.cpu_share.share_of` (1,769 MB a vCPU), at most one core for one thread.
    Only the CPU outside DynamoDB calls is counted (inside them, moto's work cannot be told from
    botocore's), so this is a lower bound of what the share adds.
    """
    share = min(1.0, share_of(round(memory_gb * 1024)))
    return cpu_seconds * (1 / share - 1)


def wrap_timed(routes: Mapping[str, Handler], observed: Observed) -> dict[str, Handler]:
    """The worker handlers, each call timed as its Lambda function's invocation.

    A function that runs another's handler (`handling.SAME_HANDLER`: the unwatched model step) gets
    a route of its own, so that its calls are billed at its own memory.
    """
    shared = {name: routes[of] for name, of in SAME_HANDLER.items() if name not in routes and of in routes}
    routes = {**routes, **shared}

    def timed(name: str, handler: Handler) -> Handler:
        function = f"{logical_name(name)}Function"

        def call(event: Any, context: Any) -> Any:
            started, cpu = time.monotonic(), time.thread_time()
            thread = threading.get_ident()
            in_store = observed.store_cpu[thread]
            observed.first_model_call.pop(thread, None)
            try:
                return handler(event, context)
            finally:
                wall = time.monotonic() - started
                observed.invoked(function, wall)
                store = observed.store_cpu[thread] - in_store
                observed.used_cpu(function, wall, time.thread_time() - cpu, store)
                first = observed.first_model_call.pop(thread, None)
                if first is not None:
                    observed.before_model.append(first[0] - cpu - (first[1] - in_store))

        return call

    return {name: timed(name, handler) for name, handler in routes.items()}


class CpuTimedClient:
    """A DynamoDB client whose calls' CPU time (the calling thread's) is added to `Observed.store_cpu`."""

    def __init__(self, client: Any, observed: Observed) -> None:
        self._client = client
        self._observed = observed
        self.exceptions = client.exceptions
        self.meta = client.meta

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._client, name)
        if not callable(target):
            return target

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return target(*args, **kwargs)
            finally:
                self._observed.store_cpu[threading.get_ident()] += time.thread_time() - started

        return timed


@contextmanager
def serving(app: Any, cpu: list[float] | None = None) -> Generator[str]:
    """The app on a free port, in a thread (the pattern of tests/support/server.py)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        if cpu is not None and thread.ident is not None:  # the server's event loop: the app's own work
            cpu.append(time.clock_gettime(time.pthread_getcpuclockid(thread.ident)))
        server.should_exit = True
        thread.join(10)
        sock.close()
