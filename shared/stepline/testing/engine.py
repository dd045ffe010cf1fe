"""What Step Functions and Lambda give the worker functions, in memory, for the harness."""

from __future__ import annotations

__all__ = ["LambdaContext", "RecordingOrchestrator"]


class RecordingOrchestrator:
    """Records what the worker asks of Step Functions: starts, stops and resumed task tokens."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.resumed: set[str] = set()

    def start_run(self, user_id: str, run_id: str) -> None:
        self.started.append(run_id)

    def stop_run(self, user_id: str, run_id: str) -> None:
        pass

    def resume(self, task_token: str) -> bool:
        first = task_token not in self.resumed
        self.resumed.add(task_token)
        return first


class LambdaContext:
    """The part of a Lambda context the handlers read: a new request id per invocation."""

    def __init__(self, request_id: str) -> None:
        self.aws_request_id = request_id
