"""Tools: what the model may call, how its input is checked, and how it runs.

A tool has a name, a description, an input schema (a pydantic model or a JSON Schema), and
optionally an executor. The executor may be a plain function, a coroutine function, or an async
generator (each yield is a preliminary output, the last one is final). A tool without an executor
is a *client-side* tool: the step ends with the call and the run waits for the client to supply
the output (the AI SDK's `addToolOutput` flow). `ask_user_question`-style tools are client-side.

Input is validated before execution: with a pydantic model by the model itself (the executor then
receives the model instance), with a JSON Schema by a small structural check (types, required
properties, enums) — enough to reject what a model typically gets wrong without a dependency.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import BaseModel, JsonValue, ValidationError

from ..llm.base import FunctionTool, ProviderTool, ToolDefinition
from ..protocol.model_messages import ProviderOptions

__all__ = [
    "ApprovalPolicy",
    "ApprovalSetting",
    "ApprovalStatus",
    "InvalidToolInputError",
    "Tool",
    "ToolContext",
    "ToolExecutor",
    "ToolKind",
    "tool",
]

ToolKind = Literal["static", "dynamic"]
ApprovalStatus = Literal["not-applicable", "approved", "denied", "user-approval"]
ApprovalSetting = ApprovalStatus | tuple[ApprovalStatus, str | None]
"""A status, or `(status, reason)`."""
ApprovalPolicy = Callable[[str, JsonValue, Any], "ApprovalSetting | None | Awaitable[ApprovalSetting | None]"]
"""`(tool_name, input, runtime_context) -> setting`; None means not applicable."""
ToolExecutor = Callable[..., Any]
"""`(input, context) -> output | Awaitable[output] | AsyncIterator[output]`; `context` is optional."""


class InvalidToolInputError(ValueError):
    """The model's input does not fit the tool's schema; the model sees this text next step."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """Passed to an executor that accepts a second argument."""

    tool_call_id: str
    tool_name: str
    run_id: str | None
    messages: list[Any]
    tools_context: Any = None
    runtime_context: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A tool definition.

    Example:
        ```python
        class WeatherInput(BaseModel):
            city: str

        async def get_weather(input: WeatherInput) -> dict[str, object]:
            return {"city": input.city, "temperature": 18}

        weather = tool("weather", "Current weather for a city", WeatherInput, get_weather)
        ```
    """

    name: str
    description: str | None = None
    input_model: type[BaseModel] | None = None
    input_schema: dict[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    execute: ToolExecutor | None = None
    kind: ToolKind = "static"
    strict: bool | None = None
    title: str | None = None
    provider_options: ProviderOptions | None = None
    to_model_output: Callable[[str, Any, Any], Any] | None = None
    """`(tool_call_id, input, output) -> ToolResultOutput wire dict`, as the SDK's `toModelOutput`."""
    provider: ProviderTool | None = None
    """Set for a tool the provider runs itself (web search, code execution): the model is told
    `provider`, and the loop never executes or claims its calls."""
    approval: ApprovalSetting | ApprovalPolicy | None = None
    """The tool's own approval rule (`@tool(approval=...)`); a per-tool entry of the run's
    `tool_approval` mapping overrides it, and it overrides a run-wide policy function."""

    @property
    def client_side(self) -> bool:
        """True when the client, not Stepline, supplies the output."""
        return self.execute is None and self.provider is None

    def definition(self) -> ToolDefinition:
        """What the model is told about this tool."""
        if self.provider is not None:
            return self.provider
        return FunctionTool(
            name=self.name,
            description=self.description,
            input_schema=self.input_schema,
            strict=self.strict,
            provider_options=self.provider_options,
        )

    def validate_input(self, value: JsonValue) -> Any:
        """The executor's argument for `value`, or `InvalidToolInputError` saying what is wrong."""
        if self.input_model is not None:
            try:
                return self.input_model.model_validate(value)
            except ValidationError as error:
                first = error.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "input"
                raise InvalidToolInputError(f"Invalid input for tool {self.name}: {where}: {first['msg']}") from None
        problem = _check_schema(value, self.input_schema, "input")
        if problem is not None:
            raise InvalidToolInputError(f"Invalid input for tool {self.name}: {problem}")
        return value

    async def run(self, argument: Any, context: ToolContext) -> AsyncIterator[tuple[Any, bool]]:
        """Run the executor; yields `(output, preliminary)` pairs, the last with `preliminary=False`."""
        if self.execute is None:
            kind = "a provider tool" if self.provider is not None else "a client-side tool"
            raise RuntimeError(f"tool {self.name} has no executor ({kind})")
        takes_context = len(inspect.signature(self.execute).parameters) >= 2
        result = self.execute(argument, context) if takes_context else self.execute(argument)
        if inspect.isasyncgen(result):
            generator = cast(AsyncIterator[Any], result)
            last: Any = None
            seen = False
            async for value in generator:
                if seen:
                    yield _plain(last), True
                last, seen = value, True
            yield _plain(last), False
            return
        if inspect.isawaitable(result):
            result = await result
        yield _plain(result), False


def _plain(value: Any) -> Any:
    """Outputs are JSON values; pydantic models become their JSON form."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    return value


def tool(
    name: str,
    description: str | None,
    schema: type[BaseModel] | Mapping[str, JsonValue],
    execute: ToolExecutor | None = None,
    **options: Any,
) -> Tool:
    """Build a `Tool` from a pydantic model or a JSON Schema."""
    if isinstance(schema, type):
        return Tool(
            name=name,
            description=description,
            input_model=schema,
            input_schema=schema.model_json_schema(),
            execute=execute,
            **options,
        )
    return Tool(name=name, description=description, input_schema=dict(schema), execute=execute, **options)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _check_schema(value: Any, schema: Mapping[str, Any], path: str) -> str | None:
    expected = schema.get("type")
    if isinstance(expected, str) and expected in _JSON_TYPES:
        ok = isinstance(value, _JSON_TYPES[expected]) and not (
            expected in ("integer", "number") and isinstance(value, bool)
        )
        if not ok:
            return f"{path}: expected {expected}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path}: must be one of {schema['enum']}"
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties", {})
        for required in schema.get("required", []):
            if required not in value:
                return f"{path}.{required}: required property missing"
        for key, item in cast(dict[str, Any], value).items():
            if key in properties:
                problem = _check_schema(item, properties[key], f"{path}.{key}")
                if problem is not None:
                    return problem
            elif schema.get("additionalProperties") is False:
                return f"{path}.{key}: unexpected property"
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(cast(list[Any], value)):
            problem = _check_schema(item, schema["items"], f"{path}[{index}]")
            if problem is not None:
                return problem
    return None
