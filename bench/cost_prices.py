"""The AWS list prices bench/cost.py bills with, and the bill of one run (pure arithmetic).

us-east-1, on-demand, arm64, as published on 2026-12-02 (confirm before quoting):

- Step Functions Standard: aws.amazon.com/step-functions/pricing (free tier not applied);
- Lambda: aws.amazon.com/lambda/pricing (arm64 duration, first tier; requests);
- DynamoDB on-demand: aws.amazon.com/dynamodb/pricing/on-demand (since the price cut of Nov 2024);
- API Gateway REST API: aws.amazon.com/api-gateway/pricing (first 333 million requests a month);
- AppSync Events: aws.amazon.com/appsync/pricing (Event API operations: each publish and each
  delivery to a subscriber; connection minutes of a WebSocket subscriber);
- S3 Standard: aws.amazon.com/s3/pricing (PUT/POST/LIST, GET).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from bench.cost_meter import Usage

__all__ = ["PRICES", "PRICES_DATE", "Bill", "Prices"]

PRICES_DATE = "2026-12-02"


@dataclass(frozen=True)
class Prices:
    transition: float = 0.025 / 1_000
    lambda_request: float = 0.20 / 1_000_000
    lambda_gb_second: float = 0.0000133334
    write_unit: float = 0.625 / 1_000_000
    read_unit: float = 0.125 / 1_000_000
    api_request: float = 3.50 / 1_000_000
    event_operation: float = 1.00 / 1_000_000
    event_connection_minute: float = 0.08 / 1_000_000
    s3_put: float = 0.005 / 1_000
    s3_get: float = 0.0004 / 1_000

    def rows(self) -> list[tuple[str, str]]:
        return [
            ("Step Functions Standard", "$0.025 per 1,000 state transitions"),
            ("Lambda arm64", "$0.0000133334 per GB-s, $0.20 per million requests"),
            ("DynamoDB on-demand", "$0.625 per million write request units, $0.125 per million read request units"),
            ("API Gateway REST", "$3.50 per million requests"),
            ("AppSync Events", "$1.00 per million operations, $0.08 per million connection-minutes"),
            ("S3 Standard", "$0.005 per 1,000 PUT, $0.0004 per 1,000 GET"),
        ]


PRICES = Prices()


@dataclass
class Bill:
    """The billable quantities of one run, by meter."""

    transitions: int = 0
    lambda_requests: int = 0
    gb_seconds: float = 0.0
    gb_seconds_by: dict[str, float] = field(default_factory=dict[str, float])
    write_units: int = 0
    write_units_by: Counter[str] = field(default_factory=Counter[str])
    dynamodb_requests: Counter[str] = field(default_factory=Counter[str])
    index_write_units: int = 0
    read_units: float = 0.0
    api_requests: int = 0
    event_operations: int = 0
    event_connection_minutes: float = 0.0
    s3_puts: int = 0
    s3_gets: int = 0
    wait: Usage = field(default_factory=Usage)
    """The DynamoDB units of the waits (included above)."""
    cpu_by: dict[str, list[float]] = field(default_factory=dict[str, list[float]])
    before_model: list[float] = field(default_factory=list[float])
    """A model step's CPU seconds before its model call, per step (outside DynamoDB calls), sorted."""
    peak_rss_mb: float = 0.0
    """The measuring process's peak resident set (everything in one process: an upper bound)."""
    """Per function: [wall seconds, CPU seconds, of which inside DynamoDB calls] (not billed: sizing)."""

    def lines(self, prices: Prices = PRICES) -> list[tuple[str, str, float]]:
        """(meter, quantity, dollars) per meter."""
        by = ", ".join(f"{name} {gbs:,.1f}" for name, gbs in sorted(self.gb_seconds_by.items()))
        return [
            ("state transitions", f"{self.transitions:,}", self.transitions * prices.transition),
            ("Lambda requests", f"{self.lambda_requests:,}", self.lambda_requests * prices.lambda_request),
            ("Lambda GB-s", f"{self.gb_seconds:,.1f} ({by})", self.gb_seconds * prices.lambda_gb_second),
            ("DynamoDB write units (tables)", f"{self.write_units:,}", self.write_units * prices.write_unit),
            (
                "DynamoDB write units (indexes)",
                f"{self.index_write_units:,}",
                self.index_write_units * prices.write_unit,
            ),
            ("DynamoDB read units", f"{self.read_units:,.1f}", self.read_units * prices.read_unit),
            ("API Gateway requests", f"{self.api_requests:,}", self.api_requests * prices.api_request),
            ("Event API operations", f"{self.event_operations:,}", self.event_operations * prices.event_operation),
            (
                "Event API connection-minutes",
                f"{self.event_connection_minutes:,.1f}",
                self.event_connection_minutes * prices.event_connection_minute,
            ),
            (
                "S3 requests",
                f"{self.s3_puts} PUT, {self.s3_gets} GET",
                self.s3_puts * prices.s3_put + self.s3_gets * prices.s3_get,
            ),
        ]

    def total(self, prices: Prices = PRICES) -> float:
        return sum(cost for _, _, cost in self.lines(prices))
