"""The price table Stepline ships: USD per million tokens of the models the providers list.

Dated 2025-11-30, from the providers' own pricing pages:
- OpenAI: https://platform.openai.com/docs/pricing (standard tier; "cached input" is `cachedInput`;
  OpenAI charges nothing extra to write its prompt cache, and bills reasoning tokens as output).
- Anthropic: https://docs.anthropic.com/en/docs/about-claude/pricing ("cache hits & refreshes" is
  `cachedInput`, the 5-minute "cache writes" is `cacheWrite`; thinking tokens are billed as output;
  prompts over 200k tokens on Sonnet's 1M-context beta cost more and are not modelled here).

Prices change: a deployment overrides or adds entries with a file (`STEPLINE_PRICES`), an agent
with its `prices`. A model missing here has an unknown cost (absent), never 0.
"""

from __future__ import annotations

from typing import Final

from .prices import ModelPrice, PriceTable

__all__ = ["DEFAULT_PRICES", "PRICES_DATE"]

PRICES_DATE: Final = "2025-11-30"


def _openai(input: float, cached_input: float, output: float) -> ModelPrice:
    return ModelPrice(input=input, cached_input=cached_input, output=output)


def _anthropic(input: float, cache_write: float, cached_input: float, output: float) -> ModelPrice:
    return ModelPrice(input=input, cache_write=cache_write, cached_input=cached_input, output=output)


DEFAULT_PRICES: Final = PriceTable(
    {
        "openai:gpt-5.1": _openai(1.25, 0.125, 10.0),
        "openai:gpt-5": _openai(1.25, 0.125, 10.0),
        "openai:gpt-5-mini": _openai(0.25, 0.025, 2.0),
        "openai:gpt-5-nano": _openai(0.05, 0.005, 0.40),
        "openai:gpt-4.1": _openai(2.0, 0.50, 8.0),
        "openai:gpt-4.1-mini": _openai(0.40, 0.10, 1.60),
        "openai:gpt-4.1-nano": _openai(0.10, 0.025, 0.40),
        "openai:gpt-4o": _openai(2.50, 1.25, 10.0),
        "openai:gpt-4o-mini": _openai(0.15, 0.075, 0.60),
        "openai:o3": _openai(2.0, 0.50, 8.0),
        "openai:o4-mini": _openai(1.10, 0.275, 4.40),
        "anthropic:claude-opus-4-5": _anthropic(5.0, 6.25, 0.50, 25.0),
        "anthropic:claude-opus-4-1": _anthropic(15.0, 18.75, 1.50, 75.0),
        "anthropic:claude-sonnet-4-5": _anthropic(3.0, 3.75, 0.30, 15.0),
        "anthropic:claude-sonnet-4": _anthropic(3.0, 3.75, 0.30, 15.0),
        "anthropic:claude-haiku-4-5": _anthropic(1.0, 1.25, 0.10, 5.0),
        "anthropic:claude-3-5-haiku": _anthropic(0.80, 1.0, 0.08, 4.0),
    }
)
