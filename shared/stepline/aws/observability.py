"""Powertools Logger, Tracer and Metrics around a worker handler.

Powertools comes from its public Lambda layer in production (template.yaml) and from the `aws`
extra locally. What reaches logs, traces and metrics is ids and outcomes only: the event is never
logged (it is ids too, but the rule is simpler kept absolute), responses are not captured in
traces, and no user text or tool data is written anywhere here.

Logs carry `run_id` and `function_request_id`; metrics (namespace `POWERTOOLS_METRICS_NAMESPACE`)
count each worker's outcomes, e.g. `ModelStep` with dimension `outcome=continue`, and a model step
that streamed output reports `TimeToFirstToken` (milliseconds from the step's start to the model's
first output; dimension `service` only, so the dashboard reads one series).
"""

from __future__ import annotations

import logging
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from ..runtime.handlers import Handler, logical_name
from ..store.redaction import RedactingFilter

__all__ = ["instrument", "redact_logs"]


def redact_logs(*handlers: logging.Handler) -> None:
    """Put a `RedactingFilter` on each handler (once): what a record says is masked before it is written.

    On a handler, not a logger: a logger's filter does not see records its children propagate
    (the `stepline.*` loggers propagate to the root, whose handler the Lambda runtime installs).
    """
    for handler in handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


def instrument(function_name: str, handler: Handler) -> Handler:
    """`handler` with structured logs, an X-Ray subsegment and an outcome metric per invocation."""
    logger = Logger(service=function_name)
    redact_logs(logger.registered_handler, *logging.getLogger().handlers)
    tracer = Tracer(service=function_name)
    metrics = Metrics(service=function_name)
    metric = logical_name(function_name)

    @logger.inject_lambda_context(clear_state=True)
    @tracer.capture_lambda_handler(capture_response=False)
    @metrics.log_metrics
    def instrumented(event: dict[str, Any], context: Any) -> dict[str, Any]:
        run_id = str(event.get("runId", ""))
        logger.append_keys(run_id=run_id)
        tracer.put_annotation(key="run_id", value=run_id)
        try:
            result = handler(event, context)
        except Exception as error:
            # The error class only: a message may quote user content; Step Functions keeps the rest.
            logger.warning("worker failed", extra={"error_type": type(error).__name__})
            metrics.add_dimension(name="outcome", value="error")
            metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
            raise
        first_output = result.get("firstOutputMs")
        if isinstance(first_output, int):
            with single_metric(
                name="TimeToFirstToken",
                unit=MetricUnit.Milliseconds,
                value=first_output,
                default_dimensions={"service": function_name},
            ):
                pass
        outcome = str(result.get("next") or result.get("status") or "done")
        metrics.add_dimension(name="outcome", value=outcome)
        metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
        logger.info("worker done", extra={"outcome": outcome})
        return result

    instrumented.__name__ = getattr(handler, "__name__", metric)
    return instrumented
