"""What a model call costs: a price table per model and the cost of one call's usage (pure).

A price is in USD per million tokens, per kind of token: `input` (not cached), `cachedInput` (read
from the provider's prompt cache), `cacheWrite` (written to it), `output` (text) and `reasoning`.
A kind left out is billed as the provider bills it when it has no separate price: cache reads and
writes at the input price, reasoning at the output price.

A model with no entry has an unknown cost: `cost_usd` is None and the usage carries no `costUsd`
(0 would be a claim). Keys are `provider:model-id`; a model's dated id (`gpt-4o-2024-08-06`,
`claude-sonnet-4-5-20250929`) finds the entry of its undated id.

`PriceTable.parse` reads a table from JSON (a deployment's file, an agent's `prices`); a malformed
table raises `PriceTableError` naming the entry and the field, so a bad table stops the process at
start-up instead of pricing runs wrongly.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from ..errors import StepLineError
from ..protocol._json import loads_strict
from .state import UsageTotals

__all__ = ["PRICED_PROVIDERS", "ModelPrice", "PriceTable", "PriceTableError", "priced"]

PRICED_PROVIDERS = ("openai", "anthropic", "scripted")
"""The providers a price table may name (a key naming another is a typo, and an error)."""

_KEY = re.compile(r"^(?P<provider>[a-z][a-z0-9-]*):(?P<model>[A-Za-z0-9][A-Za-z0-9._:/-]*)$")
_DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")
_PER_TOKEN = 1_000_000
_DIGITS = 9
"""Costs are rounded to a billionth of a dollar: sums of many small floats stay readable."""

UsdPerMillion = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class PriceTableError(StepLineError, ValueError):
    """A price table that cannot be used: the message names the table, the entry and the field."""


class ModelPrice(BaseModel):
    """One model's prices in USD per million tokens (a kind left out: see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)

    input: UsdPerMillion
    output: UsdPerMillion
    cached_input: UsdPerMillion | None = None
    cache_write: UsdPerMillion | None = None
    reasoning: UsdPerMillion | None = None

    def cost_usd(self, usage: UsageTotals) -> float | None:
        """The cost of one call's usage; None while its input or output count is unknown."""
        if usage.input_tokens is None or usage.output_tokens is None:
            return None
        cached = usage.cached_input_tokens or 0
        written = usage.cache_write_tokens or 0
        reasoning = min(usage.reasoning_tokens or 0, usage.output_tokens)
        # The input count includes cache reads and writes, the output count includes reasoning.
        uncached = max(usage.input_tokens - cached - written, 0)
        micro = (
            uncached * self.input
            + cached * _or(self.cached_input, self.input)
            + written * _or(self.cache_write, self.input)
            + (usage.output_tokens - reasoning) * self.output
            + reasoning * _or(self.reasoning, self.output)
        )
        return round(micro / _PER_TOKEN, _DIGITS)

    def worst_case_usd(self, input_tokens: int, output_tokens: int) -> float:
        """The most a call of this size can cost (nothing cached, every output token at the dearer rate)."""
        dearest_output = max(self.output, _or(self.reasoning, self.output))
        dearest_input = max(self.input, _or(self.cache_write, self.input))
        return round((input_tokens * dearest_input + output_tokens * dearest_output) / _PER_TOKEN, _DIGITS)


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


@dataclass(frozen=True, slots=True)
class PriceTable:
    """Prices by `provider:model-id`."""

    entries: Mapping[str, ModelPrice] = field(default_factory=dict[str, ModelPrice])

    def price_of(self, provider: str, model_id: str | None) -> ModelPrice | None:
        """The model's price, by its exact id, else by its id without a date suffix; None: unknown."""
        if model_id is None:
            return None
        exact = self.entries.get(f"{provider}:{model_id}")
        if exact is not None:
            return exact
        undated = _DATED.sub("", model_id)
        return self.entries.get(f"{provider}:{undated}") if undated != model_id else None

    def merged(self, overrides: PriceTable | None) -> PriceTable:
        """This table with `overrides`' entries replacing or adding to its own."""
        if overrides is None or not overrides.entries:
            return self
        return PriceTable({**self.entries, **overrides.entries})

    @classmethod
    def parse(cls, raw: object, *, source: str) -> PriceTable:
        """A table from its JSON form (`{"openai:gpt-5.1": {"input": 1.25, "output": 10}}`)."""
        if isinstance(raw, PriceTable):
            return raw
        if not isinstance(raw, Mapping):
            raise PriceTableError(f"{source}: expected an object of 'provider:model-id' -> prices")
        entries: dict[str, ModelPrice] = {}
        for key, value in cast(Mapping[Any, Any], raw).items():
            entries[_checked_key(key, source)] = _price(key, value, source)
        return cls(entries)

    @classmethod
    def from_file(cls, path: Path, *, source: str) -> PriceTable:
        """A table from a JSON file; a missing or unreadable file is a `PriceTableError` too."""
        try:
            raw = loads_strict(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise PriceTableError(f"{source}: cannot read the price table {path} ({error})") from None
        return cls.parse(raw, source=f"{source} ({path})")


def _checked_key(key: object, source: str) -> str:
    match = _KEY.match(key) if isinstance(key, str) else None
    if match is None:
        raise PriceTableError(f"{source}: {key!r} is not 'provider:model-id' (such as openai:gpt-5.1)")
    if match["provider"] not in PRICED_PROVIDERS:
        known = ", ".join(PRICED_PROVIDERS)
        raise PriceTableError(f"{source}: {key}: unknown model provider {match['provider']!r} (known: {known})")
    return cast(str, key)


def _price(key: str, value: object, source: str) -> ModelPrice:
    if isinstance(value, ModelPrice):
        return value
    try:
        return ModelPrice.model_validate(value)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in issue['loc']) or 'price'}: {issue['msg']}" for issue in error.errors()
        )
        raise PriceTableError(f"{source}: {key}: {problems}") from None


def priced(table: PriceTable | None, provider: str, model_id: str, usage: UsageTotals) -> UsageTotals:
    """`usage` with its `cost_usd`, when the table prices the model (else as it was: unknown)."""
    price = table.price_of(provider, model_id) if table is not None else None
    cost = price.cost_usd(usage) if price is not None else None
    if cost is None or math.isnan(cost):
        return usage
    return usage.model_copy(update={"cost_usd": cost})
