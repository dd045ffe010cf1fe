"""A callback attempt as a span of its run's trace, for both senders (`stepline dev`'s outbox, the AWS function).

`stepline.send_callback`, a child of the run's root, says which notice (`stepline.callback.type`,
`.delivery_id`), which attempt, the delivery's state after it and the receiver's HTTP status; an
attempt the receiver did not accept is a failed span whose `error.type` is the status (not 2xx),
`refused` (the URL failed its check) or the network error's class. Never the URL (it may carry
a token) or the notice's body. Without telemetry it is the attempt alone.
"""

from __future__ import annotations

from ..loop.telemetry import Span
from ..store.errors import NotFound
from ..store.records import RunRecord
from .callback_delivery import attempt_delivery
from .callback_urls import UrlPolicy
from .deliveries import Delivery
from .services import Services
from .traces import request_span

__all__ = ["run_of", "traced_attempt"]


def run_of(services: Services, delivery: Delivery) -> RunRecord | None:
    """The delivery's run, read only when there is a trace to join (None: tracing off, or the run is gone)."""
    if services.telemetry is None:
        return None
    try:
        return services.store.get_run(delivery.user_id, delivery.run_id)
    except NotFound:
        return None


def traced_attempt(
    services: Services,
    run: RunRecord | None,
    delivery: Delivery,
    *,
    secret: str,
    policy: UrlPolicy,
    now: int,
    backoff_base: float,
) -> Delivery:
    """One attempt (`attempt_delivery`) in its span of `run`'s trace."""
    attributes = {
        "stepline.callback.type": delivery.type,
        "stepline.callback.delivery_id": delivery.delivery_id,
        "http.request.method": "POST",
    }
    with request_span(services, "stepline.send_callback", run, attributes) as span:
        tried = attempt_delivery(delivery, secret=secret, policy=policy, now=now, backoff_base=backoff_base)
        _record(span, tried)
    return tried


def _record(span: Span, tried: Delivery) -> None:
    last = tried.attempts[-1]
    span.update(
        {
            "stepline.callback.attempt": len(tried.attempts),
            "stepline.callback.state": tried.state,
            "http.response.status_code": last.status,
        }
    )
    if last.status is None:
        error = last.error or ""
        span.error("refused" if error.startswith("callbackUrl:") else error.partition(":")[0] or "no_response")
    elif not 200 <= last.status < 300:
        span.error(str(last.status))
