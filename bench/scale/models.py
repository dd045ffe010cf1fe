"""The limit models of the scale simulation: a token bucket, Lambda's concurrency, and closed forms.

- `TokenBucket`: `rate` tokens a second into a bucket of `burst`, continuously. `take` refuses when
  the bucket is empty (API throttling: the caller gets an error); `reserve` queues instead (a Step
  Functions state transition waits for its token: the bucket goes into debt, and the caller learns
  how long it waits).
- `Lambda`: the account's concurrent executions shared by every function, each function's own
  scaling rate (a token bucket of new execution environments: 1,000 per 10 s), warm environments
  reused, reserved concurrency carved out of the account's pool.
- Closed forms the unit tests hold the simulation to: a bucket's throttles under a constant demand,
  Little's law, the Erlang C probability of waiting in an M/M/c queue.

Pure arithmetic on simulated time: no clock, no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Function", "Lambda", "TokenBucket", "bucket_throttles", "erlang_c", "little"]


@dataclass
class TokenBucket:
    rate: float
    burst: float
    tokens: float = field(init=False)
    at: float = 0.0
    taken: int = 0
    refused: int = 0

    def __post_init__(self) -> None:
        self.tokens = self.burst

    def _refill(self, now: float) -> None:
        if now > self.at:
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
            self.at = now

    def take(self, now: float, n: float = 1.0) -> bool:
        """Take `n` tokens if the bucket holds them (else count a refusal and take nothing)."""
        self._refill(now)
        if self.tokens >= n:
            self.tokens -= n
            self.taken += 1
            return True
        self.refused += 1
        return False

    def reserve(self, now: float, n: float = 1.0) -> float:
        """Take `n` tokens, in debt if need be; the seconds the caller waits for them (0: none)."""
        self._refill(now)
        self.tokens -= n
        self.taken += 1
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate


def bucket_throttles(demand: float, duration: float, rate: float, burst: float) -> float:
    """Requests refused when `demand` arrive evenly over `duration` s at a full bucket (demand ≥ rate·duration)."""
    return max(0.0, demand - burst - rate * duration)


def little(arrival_rate: float, time_in_system: float) -> float:
    """Little's law: the mean number in the system, L = λ·W."""
    return arrival_rate * time_in_system


def erlang_c(servers: int, offered_load: float) -> float:
    """The probability that an arrival waits in an M/M/c queue with `servers` and load a = λ/μ (< c)."""
    if offered_load >= servers:
        return 1.0
    term = 1.0
    total = 1.0
    for k in range(1, servers):
        term *= offered_load / k
        total += term
    last = term * offered_load / servers * servers / (servers - offered_load)
    return last / (total + last)


@dataclass
class Function:
    name: str
    scaling: TokenBucket
    reserved: int | None = None
    busy: int = 0
    idle: int = 0
    peak: int = 0
    cold: int = 0
    throttled: int = 0
    invocations: int = 0


@dataclass
class Lambda:
    """The account's Lambda concurrency: `limit` concurrent executions, each function scaling at `per_10s`."""

    limit: int
    per_10s: int = 1_000
    functions: dict[str, Function] = field(default_factory=dict[str, Function])
    busy: int = 0
    peak: int = 0

    def function(self, name: str, reserved: int | None = None) -> Function:
        if name not in self.functions:
            rate = self.per_10s / 10.0
            self.functions[name] = Function(name, TokenBucket(rate, float(self.per_10s)), reserved)
        return self.functions[name]

    def _unreserved_free(self) -> int:
        reserved = sum(f.reserved for f in self.functions.values() if f.reserved is not None)
        unreserved_busy = sum(f.busy for f in self.functions.values() if f.reserved is None)
        return self.limit - reserved - unreserved_busy

    def acquire(self, now: float, name: str) -> str | None:
        """Start an invocation of `name`: "warm", "cold" (a new environment), or None (throttled, 429)."""
        fn = self.function(name)
        free = (fn.reserved - fn.busy) if fn.reserved is not None else self._unreserved_free()
        if free <= 0:
            fn.throttled += 1
            return None
        if fn.idle > 0:
            fn.idle -= 1
            kind = "warm"
        elif fn.scaling.take(now):
            fn.cold += 1
            kind = "cold"
        else:
            fn.throttled += 1
            return None
        fn.busy += 1
        fn.invocations += 1
        fn.peak = max(fn.peak, fn.busy)
        self.busy += 1
        self.peak = max(self.peak, self.busy)
        return kind

    def release(self, name: str) -> None:
        fn = self.functions[name]
        fn.busy -= 1
        fn.idle += 1
        self.busy -= 1
