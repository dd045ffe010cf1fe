"""Structured output: the schema reaches the model and the final text parses into the pydantic model."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from stepline.errors import StepLineError
from stepline.loop.stream_text import stream_text

from .support import collect, model, run, text_step


class Forecast(BaseModel):
    city: str
    temperature: int


def _output(answer: str, output: type[BaseModel] | None = Forecast) -> tuple[Any, Any]:
    scripted = model(text_step(answer))

    async def scenario() -> Any:
        result = stream_text(model=scripted, prompt="forecast", output=output)
        await collect(result)
        try:
            return await result.output()
        except Exception as error:  # returned, so the test can look at it
            return error

    return scripted, run(scenario)


def test_the_schema_is_sent_as_the_response_format() -> None:
    scripted, _ = _output('{"city":"Paris","temperature":18}')
    response_format = scripted.calls[0].response_format
    assert response_format is not None
    assert (response_format.type, response_format.name) == ("json", "Forecast")
    assert response_format.schema == Forecast.model_json_schema()


def test_the_final_text_parses_into_the_model() -> None:
    _, value = _output('{"city":"Paris","temperature":18}')
    assert value == Forecast(city="Paris", temperature=18)


def test_text_that_does_not_fit_the_model_is_an_error() -> None:
    _, value = _output('{"city":"Paris"}')
    assert isinstance(value, ValidationError)


def test_text_that_is_not_json_is_an_error() -> None:
    _, value = _output("It is sunny.")
    assert isinstance(value, ValueError)


def test_without_an_output_model_there_is_no_response_format_and_no_output() -> None:
    scripted, value = _output('{"city":"Paris","temperature":18}', output=None)
    assert scripted.calls[0].response_format is None
    assert isinstance(value, StepLineError)
    assert "no output model" in str(value)


def test_output_parses_the_final_steps_text_only() -> None:
    from stepline.loop.stop import is_step_count
    from stepline.loop.tools import Tool

    from .support import call, tool_step

    scripted = model(
        [
            {"type": "text-start", "id": "a"},
            {"type": "text-delta", "id": "a", "delta": "Let me check."},
            {"type": "text-end", "id": "a"},
            *tool_step(call("c1", "t")),
        ],
        text_step('{"city":"Oslo","temperature":3}'),
    )

    async def scenario() -> Any:
        result = stream_text(
            model=scripted,
            prompt="x",
            output=Forecast,
            tools=[Tool(name="t", execute=lambda _: 1)],
            stop_when=is_step_count(2),
        )
        return await result.output()

    assert run(scenario) == Forecast(city="Oslo", temperature=3)
    assert all(c.response_format is not None for c in scripted.calls)
