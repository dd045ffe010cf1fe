"""Powertools Logger and Metrics around a worker handler (traces are OpenTelemetry's: `stepline.tracing`).

Powertools comes from its public Lambda layer in production (template.yaml) and from the `aws`
extra locally; its Tracer (the X-Ray SDK) is not used: the run's trace is exported over OTLP by
the handlers themselves (`runtime.traces`). What reaches logs and metrics is ids and outcomes
only: the event is never logged (it is ids too, but the rule is simpler kept absolute), and no
user text or tool data is written anywhere here.

Logs carry `run_id`, `function_request_id` and, with tracing on, the run's `trace_id` and the
invocation's `span_id` (`TraceLogFilter`: on every line written inside the invocation's span,
the worker's own included); metrics (namespace `POWERTOOLS_METRICS_NAMESPACE`)
count each worker's outcomes, e.g. `ModelStep` with dimension `outcome=continue`, and a model step
that streamed output reports `TimeToFirstToken` (milliseconds from the step's start to the model's
first output; dimension `service` only, so the dashboard reads one series).
"""

from __future__ import annotations

import logging
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from ..runtime.handling import Handler, logical_name
from ..store.redaction import RedactingFilter
from ..tracing.log_context import TraceLogFilter, forget_last_trace, last_trace

__all__ = ["instrument", "redact_logs"]


def redact_logs(*handlers: logging.Handler) -> None:
    """Put a `RedactingFilter` (and the trace ids' `TraceLogFilter`) on each handler, once.

    What a record says is masked before it is written.

    On a handler, not a logger: a logger's filter does not see records its children propagate
    (the `stepline.*` loggers propagate to the root, whose handler the Lambda runtime installs).
    """
    for handler in handlers:
        if not any(isinstance(f, TraceLogFilter) for f in handler.filters):
            handler.addFilter(TraceLogFilter())
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


def instrument(function_name: str, handler: Handler) -> Handler:
    """`handler` with structured logs and an outcome metric per invocation."""
    logger = Logger(service=function_name)
    redact_logs(logger.registered_handler, *logging.getLogger().handlers)
    metrics = Metrics(service=function_name)
    metric = logical_name(function_name)

    @logger.inject_lambda_context(clear_state=True)
    @metrics.log_metrics
    def instrumented(event: dict[str, Any], context: Any) -> dict[str, Any]:
        logger.append_keys(run_id=str(event.get("runId", "")))
        forget_last_trace()
        try:
            result = handler(event, context)
        except Exception as error:
            _trace_keys(logger)
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
        _trace_keys(logger)
        outcome = str(result.get("next") or result.get("status") or "done")
        metrics.add_dimension(name="outcome", value=outcome)
        metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
        logger.info("worker done", extra={"outcome": outcome})
        return result

    instrumented.__name__ = getattr(handler, "__name__", metric)
    return instrumented


def _trace_keys(logger: Logger) -> None:
    """The invocation's trace ids on the lines logged after its span closed."""
    ids = last_trace()
    if ids is not None:
        logger.append_keys(trace_id=ids[0], span_id=ids[1])
