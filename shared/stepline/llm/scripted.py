"""The scripted model: plays back JSON scripts of stream parts, for tests and the demo.

Named for what it is: it does not think, it replays. A script is a list of steps; each step is a
list of stream parts in the AI SDK's `LanguageModelV4StreamPart` JSON shape (what
`MockLanguageModelV4` plays in the SDK's own tests), or an object with directives:

    {"parts": [...], "delayMs": 20}          pause before each part (timeouts, abort, pacing)
    {"parts": [...], "delaysMs": [0, 5, …]}  the pause before each part, one per part (a first
                                             token's latency apart from the pace of the rest)
    {"raise": {"kind": "rate_limit", "retryAfter": 1.5, "status": 429}, "after": 0}
                                             fail with a ModelCallError after `after` parts

Pauses keep to the call's own clock, as a provider's tokens do: part k is due the sum of the
pauses up to it after the call started, and a consumer that fell behind gets the parts already due
at once (it does not push the rest of the script later). Every call consumes the next step. A
call beyond the script fails loudly (`ScriptExhaustedError`) rather than inventing output, and
`assert_consumed()` catches a script that was not played to its end. The prompts received are
kept in `calls` for assertions.

The call counter makes a `ScriptedModel` play one run per process. `stepline.llm.script_book`
has the stateless kind (its output depends on the prompt only), for a server or AWS Lambda.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..errors import StepLineError
from ..protocol._json import loads_strict
from .base import ModelCallOptions, ModelCapabilities
from .errors import ModelCallError
from .stream_parts import ModelStreamPart, parse_stream_part

__all__ = ["ScriptExhaustedError", "ScriptedModel", "ScriptedStep", "play_step"]


class ScriptExhaustedError(StepLineError):
    """The loop asked the scripted model for more steps than the script has."""


@dataclass(frozen=True, slots=True)
class ScriptedStep:
    """One scripted model call."""

    parts: list[ModelStreamPart]
    delay: float = 0.0
    delays: tuple[float, ...] = ()
    """The pause before each part (`delaysMs`); a part past its end pauses `delay`."""
    raise_error: dict[str, Any] | None = None
    raise_after: int = 0

    @classmethod
    def parse(cls, value: Any) -> ScriptedStep:
        if isinstance(value, list):
            return cls(parts=[parse_stream_part(p) for p in cast(list[Any], value)])
        if not isinstance(value, dict):
            raise ValueError("a script step is a list of stream parts or an object with 'parts'")
        step = cast(dict[str, Any], value)
        delays: Any = step.get("delaysMs", [])
        if not isinstance(delays, list) or not all(_is_pause(d) for d in cast(list[Any], delays)):
            raise ValueError("delaysMs is a list of pauses in milliseconds (numbers >= 0), one per part")
        return cls(
            parts=[parse_stream_part(p) for p in step.get("parts", [])],
            delay=float(step.get("delayMs", 0)) / 1000,
            delays=tuple(float(d) / 1000 for d in cast(list[float], delays)),
            raise_error=step.get("raise"),
            raise_after=int(step.get("after", 0)),
        )


@dataclass
class ScriptedModel:
    """A `LanguageModel` that replays a script."""

    steps: list[ScriptedStep]
    model_id: str = "script"
    provider: str = "scripted"
    capabilities: ModelCapabilities = field(
        default_factory=lambda: ModelCapabilities(input_media_types=("*/*",), reasoning_history=True)
    )
    calls: list[ModelCallOptions] = field(default_factory=list[ModelCallOptions])

    @classmethod
    def from_script(cls, script: Any, *, model_id: str = "script") -> ScriptedModel:
        """From parsed JSON: a list of steps, or `{"steps": [...]}`."""
        steps = cast(Sequence[Any], script["steps"] if isinstance(script, dict) else script)
        return cls(steps=[ScriptedStep.parse(s) for s in steps], model_id=model_id)

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        data: Any = loads_strict(Path(path).read_text(encoding="utf-8"))
        return cls.from_script(data, model_id=Path(path).stem)

    def assert_consumed(self) -> None:
        """Fail when the run ended before the script did."""
        if len(self.calls) != len(self.steps):
            raise AssertionError(
                f"the script has {len(self.steps)} steps but the model was called {len(self.calls)} times"
            )

    async def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        index = len(self.calls)
        self.calls.append(options)
        if index >= len(self.steps):
            raise ScriptExhaustedError(
                f"scripted model called {index + 1} times, but the script has {len(self.steps)} steps"
            )
        async with aclosing(play_step(self.steps[index], provider=self.provider)) as parts:
            async for part in parts:
                yield part


async def play_step(
    step: ScriptedStep, *, provider: str, parts: Sequence[ModelStreamPart] | None = None
) -> AsyncGenerator[ModelStreamPart]:
    """Play one scripted call: its parts (or `parts` in their place), its pacing and its failure."""
    played = step.parts if parts is None else parts
    due = _now()
    for position, part in enumerate(played):
        if step.raise_error is not None and position == step.raise_after:
            raise _error(step.raise_error, provider)
        pause = step.delays[position] if position < len(step.delays) else step.delay
        if pause:
            due += pause
            await _sleep(max(due - _now(), 0.0))
        yield part
    if step.raise_error is not None and step.raise_after >= len(played):
        raise _error(step.raise_error, provider)


def _is_pause(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


_now = time.monotonic
_sleep = asyncio.sleep
"""The clock and the pause of `play_step` (module attributes, so a test can drive them)."""


def _error(spec: dict[str, Any], provider: str) -> ModelCallError:
    return ModelCallError(
        str(spec.get("message", f"scripted {spec.get('kind', 'server')} error")),
        kind=spec.get("kind", "server"),
        provider=provider,
        status_code=spec.get("status"),
        retry_after=spec.get("retryAfter"),
    )
