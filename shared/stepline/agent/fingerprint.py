"""An agent's fingerprint: a stable digest of its definition, recorded on each run at its start.

Settings are described as JSON (callables by qualified name, pydantic models by schema, tools by
name, description, input schema, approval and, for a provider tool, its id and options), so the
same definition gives the same digest in every process and a redeploy that changes it is seen.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, cast

from pydantic import BaseModel, JsonValue

from ..loop.tools import Tool
from ..protocol._json import dumps

__all__ = ["digest"]

_OWN = ("name", "description", "model", "instructions", "tools")
_NOT_RUN = ("schedules", "hooks")
"""What starts runs, not how one runs: a changed timetable leaves the runs' fingerprint as it was."""


def digest(settings: Mapping[str, object], tools: Sequence[Tool], model_spec: str) -> str:
    """16 hex digits of an agent's described definition.

    `settings` are the agent's fields in their declared order (its `name`, `description`,
    `instructions` and the rest; `model` and `tools` are described from `model_spec`, which
    names the model, and `tools`).
    """
    described = {
        "name": cast(JsonValue, settings["name"]),
        "description": cast(JsonValue, settings["description"]),
        "model": model_spec,
        "instructions": _describe(settings["instructions"]),
        "tools": [_tool_description(t) for t in tools],
        **{key: _describe(value) for key, value in settings.items() if key not in _OWN + _NOT_RUN},
    }
    return hashlib.sha256(dumps(described).encode()).hexdigest()[:16]


def _describe(setting: object) -> JsonValue:
    """A stable JSON description of a setting (callables by qualified name, models by schema)."""
    if setting is None or isinstance(setting, str | int | float | bool):
        return setting
    if isinstance(setting, type):
        if issubclass(setting, BaseModel):
            return cast(JsonValue, setting.model_json_schema())
        return f"type:{setting.__module__}.{setting.__qualname__}"
    value: Any = setting
    if isinstance(value, BaseModel):
        return cast(JsonValue, value.model_dump(mode="json", by_alias=True))
    if callable(value):
        return f"callable:{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', '?')}"
    if isinstance(value, Mapping):
        return {str(k): _describe(v) for k, v in cast(Mapping[Any, Any], value).items()}
    if isinstance(value, Sequence):
        return [_describe(v) for v in cast(Sequence[Any], value)]
    fields: Any = getattr(value, "__dataclass_fields__", None)
    if isinstance(fields, dict):
        return {str(k): _describe(getattr(value, str(k))) for k in cast(dict[Any, Any], fields)}
    return repr(value)


def _tool_description(tool: Tool) -> JsonValue:
    described: dict[str, JsonValue] = {
        "name": tool.name,
        "description": tool.description,
        "input": tool.input_schema,
        "clientSide": tool.client_side,
        "approval": _describe(tool.approval),
    }
    if tool.provider is not None:  # only then, so the fingerprints of function tools stay as they were
        described["provider"] = {"id": tool.provider.id, "args": tool.provider.args}
    return described
