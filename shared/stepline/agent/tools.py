"""`tool`: a typed Python function becomes a tool; or, as before, a tool from a schema.

    @tool
    def get_weather(city: Annotated[str, Field(description="City name")], unit: Literal["C", "F"] = "C") -> dict:
        '''Current weather for a city.'''

    @tool(approval="user-approval")
    async def delete_file(path: str, context: RunContext) -> dict:
        '''Delete a file from the conversation's workspace.'''

    @tool(client_side=True)
    def ask_user(question: str) -> str:
        '''Ask the user; the client answers (the AI SDK's addToolOutput).'''

    weather = tool("get_weather", "Current weather for a city.", WeatherInput, get_weather)  # schema form

The name is the function's, the description its docstring (without the `Args:` section, whose
entries describe the parameters that have no `Field(description=...)`), and the input JSON Schema
is what pydantic infers from the parameters: plain types, `Literal`, defaults, `Annotated[...,
Field(...)]`, pydantic models. A single parameter typed as a pydantic model is the whole input (the
schema form's shape). A parameter annotated as `RunContext` receives the run's context, one
annotated as `ToolContext` the call's. The function may be sync, async, or an async generator
(each yield but the last is a preliminary output). Anything pydantic cannot build fails here, at
import time, naming the tool.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any, cast, overload

from pydantic import BaseModel, ConfigDict, Field, JsonValue, PydanticSchemaGenerationError, create_model

from ..errors import StepLineError
from ..loop.tools import ApprovalPolicy, ApprovalSetting, Tool, ToolContext
from ..loop.tools import tool as schema_tool
from ..tools.context import RunContext

__all__ = ["ToolDefinitionError", "tool"]


class ToolDefinitionError(StepLineError, TypeError):
    """A function that cannot become a tool; the message names the tool and the parameter."""


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s+(\*{0,2}\w+)(?:\s*\([^)]*\))?:\s*(.*)$")
_SECTION = re.compile(r"^\s*[A-Z][A-Za-z ]+:\s*$")


def _docstring(function: Callable[..., Any]) -> tuple[str | None, dict[str, str]]:
    """(description, parameter descriptions) from a Google-style docstring."""
    text = inspect.getdoc(function)
    if not text:
        return None, {}
    description: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in text.splitlines():
        if _ARGS_HEADER.match(line):
            in_args, current = True, None
            continue
        if in_args:
            if _SECTION.match(line) and not line.startswith(" "):
                in_args = False
            else:
                found = _ARG_LINE.match(line)
                if found and len(line) - len(line.lstrip()) <= 4:
                    name = found.group(1).lstrip("*")
                    params[name] = found.group(2).strip()
                    current = name
                elif current is not None and line.strip():
                    params[current] = f"{params.get(current, '')} {line.strip()}".strip()
                continue
        description.append(line)
    return "\n".join(description).strip() or None, params


def _injected(annotation: Any) -> str | None:
    """Which context a parameter receives, judged by its annotation (None: it is model input)."""
    base = typing.get_origin(annotation) or annotation
    if base is typing.Annotated:
        base = typing.get_args(annotation)[0]
    if isinstance(base, type):
        if issubclass(base, RunContext):
            return "run"
        if issubclass(base, ToolContext):
            return "tool"
    return None


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _input_model(
    name: str, function: Callable[..., Any], described: Mapping[str, str]
) -> tuple[type[BaseModel], dict[str, str], bool]:
    """(input model, {parameter: injected kind}, whole) for `function`; `whole`: the model is the one parameter."""
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception as error:
        raise ToolDefinitionError(f"tool {name}: cannot resolve the type hints of its parameters: {error}") from None
    injected: dict[str, str] = {}
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ToolDefinitionError(f"tool {name}: *args and **kwargs cannot be described to a model")
        annotation = hints.get(parameter.name, Any)
        kind = _injected(annotation)
        if kind is not None:
            injected[parameter.name] = kind
            continue
        if parameter.name not in hints:
            raise ToolDefinitionError(f"tool {name}: parameter {parameter.name} has no type annotation")
        default = ... if parameter.default is parameter.empty else parameter.default
        description = described.get(parameter.name)
        if description is not None and not _has_field_description(annotation):
            fields[parameter.name] = (annotation, Field(default, description=description))
        else:
            fields[parameter.name] = (annotation, default)
    if len(fields) == 1:
        only = next(iter(fields.values()))[0]
        if isinstance(only, type) and issubclass(only, BaseModel):
            return only, injected, True
    model_name = "".join(word.capitalize() for word in re.split(r"[^A-Za-z0-9]+", name) if word) + "Input"
    try:
        model = create_model(model_name, __base__=_Input, **fields)
        model.model_json_schema()
    except (PydanticSchemaGenerationError, TypeError, ValueError) as error:
        raise ToolDefinitionError(f"tool {name}: pydantic cannot build its input schema: {error}") from None
    return model, injected, False


def _has_field_description(annotation: Any) -> bool:
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(getattr(m, "description", None) for m in typing.get_args(annotation)[1:])


def _executor(
    function: Callable[..., Any], injected: Mapping[str, str], whole: bool
) -> Callable[[BaseModel, ToolContext], Any]:
    """`(validated input, tool context) -> function(...)`.

    The result is returned as it is (value, coroutine or async generator), so the loop's `Tool.run`
    handles each kind.
    """
    (whole_name,) = [p for p in inspect.signature(function).parameters if p not in injected] if whole else [None]

    def execute(argument: BaseModel, context: ToolContext) -> Any:
        kwargs: dict[str, Any] = {whole_name: argument} if whole_name else dict(argument)
        for parameter, kind in injected.items():
            kwargs[parameter] = context if kind == "tool" else context.runtime_context
        return function(**kwargs)

    return execute


def _from_function(
    function: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    approval: ApprovalSetting | ApprovalPolicy | None,
    client_side: bool,
    options: Mapping[str, Any],
) -> Tool:
    tool_name = name or function.__name__
    docstring, described = _docstring(function)
    model, injected, whole = _input_model(tool_name, function, described)
    if client_side and injected:
        raise ToolDefinitionError(f"tool {tool_name}: a client-side tool runs in the client and receives no context")
    execute = None if client_side else _executor(function, injected, whole)
    return Tool(
        name=tool_name,
        description=description if description is not None else docstring,
        input_model=model,
        input_schema=cast(dict[str, JsonValue], model.model_json_schema()),
        execute=execute,
        approval=approval,
        **options,
    )


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    approval: ApprovalSetting | ApprovalPolicy | None = None,
    client_side: bool = False,
    **options: Any,
) -> Callable[[Callable[..., Any]], Tool]: ...
@overload
def tool(
    name: str,
    description: str | None,
    schema: type[BaseModel] | Mapping[str, JsonValue],
    execute: Callable[..., Any] | None = None,
    /,
    **options: Any,
) -> Tool: ...
def tool(*args: Any, **kwargs: Any) -> Any:
    """A tool from a function (`@tool`, `@tool(...)`), or from a schema (`tool(name, description, schema, fn)`).

    Keyword options of the decorator: `name`, `description` (default: the function's), `approval`
    (a status such as `"user-approval"`, or a policy `(tool_name, input, context) -> status`),
    `client_side=True` (the client supplies the output; the body is never called), and the
    `Tool` fields `strict`, `title`, `provider_options`, `to_model_output`.
    """
    if args and isinstance(args[0], str):
        return schema_tool(*args, **kwargs)
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return _from_function(args[0], name=None, description=None, approval=None, client_side=False, options={})
    if args:
        raise TypeError("tool: use @tool, @tool(name=..., approval=...), or tool(name, description, schema, execute)")

    def decorate(function: Callable[..., Any]) -> Tool:
        options = dict(kwargs)
        return _from_function(
            function,
            name=options.pop("name", None),
            description=options.pop("description", None),
            approval=options.pop("approval", None),
            client_side=bool(options.pop("client_side", False)),
            options=options,
        )

    return decorate
