"""Callbacks: a signed JSON notice POSTed to a run's `callbackUrl` when it ends or waits for a person.

The notice is a lifecycle event (`stepline.runtime.notifications`) in the Standard Webhooks shape:
`{"type": "run.completed", "timestamp": "...", "data": {...the event's detail...}}`, signed with
the Standard Webhooks scheme (the `standardwebhooks` package: headers `webhook-id` — the event's
id, the same on every attempt so a receiver drops a repeat —, `webhook-timestamp` and
`webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`), which a receiver verifies
with any Standard Webhooks library and rejects when the timestamp is over five minutes off.

Each delivery is tried until the receiver answers 2xx, with exponential back-off, and every
attempt (time, HTTP status or error) is recorded on the delivery; who tries is never the run's own
step (a thread of `stepline dev`, a queue-driven function on AWS), so a slow or failing receiver
never delays or fails a run.
"""

from __future__ import annotations

import datetime as dt

import urllib3
from standardwebhooks import Webhook

from ..protocol._json import dumps
from .callback_urls import CallbackTarget, RefusedUrl, UrlPolicy
from .deliveries import Attempt, Delivery
from .notifications import RunEvent

__all__ = [
    "MAX_ATTEMPTS",
    "attempt_delivery",
    "backoff_seconds",
    "new_delivery",
    "notice_type",
    "signed_headers",
]

MAX_ATTEMPTS = 8
"""Attempts of one delivery before it is given up (`failed`); with a 2 s base, about four minutes."""
TIMEOUT_SECONDS = 10.0
"""One attempt's connect and read timeout."""
_TYPES = {
    "Approval Requested": "run.waiting.approval",
    "Question Asked": "run.waiting.question",
    "Run Completed": "run.completed",
    "Run Failed": "run.failed",
    "Run Aborted": "run.aborted",
}
_ERROR_CHARS = 300


def notice_type(event: RunEvent) -> str:
    """The notice's `type` (`run.completed`, `run.waiting.approval`, ...)."""
    return _TYPES[event.detail_type]


def new_delivery(event: RunEvent, url: str, *, now: int) -> Delivery:
    """The delivery of `event` to `url`, due at once."""
    detail = event.detail
    stamp = dt.datetime.fromtimestamp(now / 1000, tz=dt.UTC).isoformat().replace("+00:00", "Z")
    body = dumps({"type": notice_type(event), "timestamp": stamp, "data": detail})
    return Delivery(
        delivery_id=str(detail["eventId"]),
        user_id=str(detail["userId"]),
        run_id=str(detail["runId"]),
        url=url,
        type=notice_type(event),
        body=body,
        next_at=now,
    )


def signed_headers(secret: str, delivery: Delivery, *, now: int) -> dict[str, str]:
    """The Standard Webhooks headers of one attempt (signed at `now`)."""
    when = dt.datetime.fromtimestamp(now // 1000, tz=dt.UTC)
    signature = Webhook(secret).sign(delivery.delivery_id, when, delivery.body)
    return {
        "content-type": "application/json",
        "user-agent": "Stepline-Callbacks/1",
        "webhook-id": delivery.delivery_id,
        "webhook-timestamp": str(now // 1000),
        "webhook-signature": signature,
    }


def backoff_seconds(attempts: int, base: float) -> float:
    """The wait after the `attempts`-th failed attempt: base, 2 base, 4 base, ... (at most an hour)."""
    return min(base * 2 ** max(attempts - 1, 0), 3600.0)


def _post(target: CallbackTarget, headers: dict[str, str], body: str) -> int:
    """POST to the checked address (never the name again: no second resolution), no redirects."""
    timeout = urllib3.Timeout(connect=TIMEOUT_SECONDS, read=TIMEOUT_SECONDS)
    host_header = target.host if target.port in (80, 443) else f"{target.host}:{target.port}"
    if target.scheme == "https":
        pool: urllib3.HTTPConnectionPool = urllib3.HTTPSConnectionPool(
            target.address, target.port, server_hostname=target.host, assert_hostname=target.host, timeout=timeout
        )
    else:
        pool = urllib3.HTTPConnectionPool(target.address, target.port, timeout=timeout)
    with pool:
        response = pool.urlopen(
            "POST",
            target.path,
            body=body.encode(),
            headers={**headers, "host": host_header},
            redirect=False,
            retries=False,
            preload_content=True,
        )
        return response.status


def attempt_delivery(delivery: Delivery, *, secret: str, policy: UrlPolicy, now: int, backoff_base: float) -> Delivery:
    """One attempt: the URL checked again, signed, POSTed; the delivery with the attempt recorded."""
    status: int | None = None
    error: str | None = None
    try:
        target = policy.check(delivery.url)
        status = _post(target, signed_headers(secret, delivery, now=now), delivery.body)
        if not 200 <= status < 300:
            error = "redirects are not followed" if 300 <= status < 400 else None
    except RefusedUrl as refused:
        error = str(refused)
    except (urllib3.exceptions.HTTPError, OSError) as failure:
        error = f"{type(failure).__name__}: {failure}"[:_ERROR_CHARS]
    attempts = [*delivery.attempts, Attempt(at=now, status=status, error=error)]
    if status is not None and 200 <= status < 300:
        return delivery.model_copy(update={"attempts": attempts, "state": "delivered"})
    if len(attempts) >= MAX_ATTEMPTS:
        return delivery.model_copy(update={"attempts": attempts, "state": "failed"})
    wait_ms = int(backoff_seconds(len(attempts), backoff_base) * 1000)
    return delivery.model_copy(update={"attempts": attempts, "next_at": now + wait_ms})
