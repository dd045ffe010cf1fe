"""The scripted model's pacing: a pause per part (`delaysMs`), kept on the call's own clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from stepline.llm import scripted
from stepline.llm.scripted import ScriptedStep, play_step

PARTS: list[dict[str, Any]] = [
    {"type": "stream-start", "warnings": []},
    {"type": "text-start", "id": "t"},
    {"type": "text-delta", "id": "t", "delta": "a"},
    {"type": "text-delta", "id": "t", "delta": "b"},
    {"type": "text-delta", "id": "t", "delta": "c"},
]


class FakeTime:
    """A clock that only moves when the model pauses or the consumer works."""

    def __init__(self) -> None:
        self.now = 100.0
        self.pauses: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.pauses.append(round(seconds, 6))
        self.now += seconds


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(scripted, "_now", fake.monotonic)
    monkeypatch.setattr(scripted, "_sleep", fake.sleep)
    return fake


def play(step: ScriptedStep, fake: FakeTime, *, work: dict[int, float]) -> list[float]:
    """Play the step; the consumer spends `work[k]` seconds after part k. When each part came."""
    seen: list[float] = []

    async def consume() -> None:
        async for _ in play_step(step, provider="scripted"):
            seen.append(fake.now)
            fake.now += work.get(len(seen) - 1, 0.0)

    asyncio.run(consume())
    return seen


def test_each_part_waits_its_own_pause(fake_time: FakeTime) -> None:
    step = ScriptedStep.parse({"parts": PARTS, "delaysMs": [0, 0, 200, 10, 10]})
    assert step.delays == (0.0, 0.0, 0.2, 0.01, 0.01)
    seen = play(step, fake_time, work={})
    assert [round(t - 100.0, 6) for t in seen] == [0.0, 0.0, 0.2, 0.21, 0.22]


def test_a_part_past_the_list_pauses_delay_ms(fake_time: FakeTime) -> None:
    step = ScriptedStep.parse({"parts": PARTS, "delaysMs": [0, 0], "delayMs": 5})
    seen = play(step, fake_time, work={})
    assert [round(t - 100.0, 6) for t in seen] == [0.0, 0.0, 0.005, 0.01, 0.015]


def test_a_slow_consumer_gets_what_is_due_at_once(fake_time: FakeTime) -> None:
    """The schedule is the model's: a consumer busy for 25 ms after `a` (at 10 ms) gets `b`, due at
    20 ms, at once (35 ms), and `c` still at its 50 ms: the delay does not push the rest later."""
    step = ScriptedStep.parse({"parts": PARTS, "delaysMs": [0, 0, 10, 10, 30]})
    seen = play(step, fake_time, work={2: 0.025})
    assert [round(t - 100.0, 6) for t in seen] == [0.0, 0.0, 0.01, 0.035, 0.05]
    assert fake_time.pauses == [0.01, 0.0, 0.015]


@pytest.mark.parametrize("delays", [[-1], ["5"], 5])
def test_bad_delays_are_refused(delays: Any) -> None:
    with pytest.raises(ValueError, match="delaysMs"):
        ScriptedStep.parse({"parts": PARTS, "delaysMs": delays})
