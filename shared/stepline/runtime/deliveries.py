"""A callback's deliveries and their attempts: the records, and the port that keeps them.

Kept apart from the sender (`stepline.runtime.callback_delivery`) so that what reads them (the
API's `GET /api/runs/{id}`) needs neither the HTTP client nor the signing library.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Attempt", "Delivery", "DeliveryLog"]


class Attempt(BaseModel):
    """One POST of a delivery: when, and the receiver's HTTP status or why there was none."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    at: int
    """Epoch milliseconds."""
    status: int | None = None
    error: str | None = None


class Delivery(BaseModel):
    """One notice for one callback URL, with its attempts."""

    model_config = ConfigDict(defer_build=True)

    delivery_id: str
    """The event's id (`<runId>/<key>`): the `webhook-id` of every attempt."""
    user_id: str
    run_id: str
    url: str
    type: str
    body: str
    """The notice's JSON, exactly as signed and sent."""
    state: Literal["pending", "delivered", "failed"] = "pending"
    attempts: list[Attempt] = Field(default_factory=list[Attempt])
    next_at: int = 0
    """When the next attempt is due (epoch milliseconds)."""


class DeliveryLog(Protocol):
    """Where deliveries and their attempts are kept (SQLite in `stepline dev`, DynamoDB on AWS)."""

    def deliveries(self, user_id: str, run_id: str) -> list[Delivery]:
        """The run's deliveries, oldest first."""
        ...
