"""The base class of every wire model: snake_case in Python, camelCase on the wire.

A wire model remembers which fields were given. `to_wire()` writes exactly those (plus the `type`
tag), which reproduces JavaScript's distinction between a key that is absent (`undefined`) and a
key whose value is `null`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["DEFERRED", "LooseWireModel", "WireModel"]

DEFERRED = ConfigDict(defer_build=True)
"""A module-level `TypeAdapter`'s config: its validator is built on first use, not at import (cold start)."""


class WireModel(BaseModel):
    """A model whose JSON form uses camelCase keys and omits fields that were never set.

    Unknown keys are rejected: Stepline forbids extras on what it emits and on the messages it
    stores. Inbound chunks use `LooseWireModel`, as the AI SDK's loose zod objects do.
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=False,
        ser_json_inf_nan="strings",
        # Validators and serializers are built on a model's first use, not at import: a Lambda
        # function imports many more wire models than its path ever validates (cold start).
        defer_build=True,
    )

    def model_post_init(self, context: Any, /) -> None:
        # The discriminating `type` tag is part of the wire form even when it came from a default.
        if "type" in type(self).model_fields:
            self.__pydantic_fields_set__.add("type")

    def to_wire(self) -> dict[str, Any]:
        """The JSON object as the AI SDK writes it (absent keys omitted, `null` kept)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class LooseWireModel(WireModel):
    """A wire model that ignores unknown keys (the AI SDK's `z.looseObject`)."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="ignore")
