"""Each model's context window and the output it reserves, by model id (overridable per agent).

The table holds the providers' published limits for the model families Stepline's adapters speak;
a model id matches its longest listed prefix (`gpt-5.1-2025-11-13` is `gpt-5.1`). An unknown model
gets `DEFAULT_WINDOW`, a deliberately modest window, so an unlisted model compacts early rather than
overflowing; an agent names its own with `ContextPolicy(context_window=..., output_reserve=...)`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_WINDOW", "WINDOWS", "ModelWindow", "window_for"]


@dataclass(frozen=True, slots=True)
class ModelWindow:
    """Tokens a request may hold in all (`context_window`), and how many of them the answer needs."""

    context_window: int
    output_reserve: int

    @property
    def input_budget(self) -> int:
        """Tokens the prompt may take: the window less the reserved answer."""
        return max(self.context_window - self.output_reserve, 1)


DEFAULT_WINDOW = ModelWindow(context_window=128_000, output_reserve=8_192)

WINDOWS: dict[str, ModelWindow] = {
    "gpt-5": ModelWindow(400_000, 128_000),
    "gpt-5-chat": ModelWindow(128_000, 16_384),
    "gpt-4.1": ModelWindow(1_047_576, 32_768),
    "gpt-4o": ModelWindow(128_000, 16_384),
    "gpt-4o-mini": ModelWindow(128_000, 16_384),
    "o1": ModelWindow(200_000, 100_000),
    "o3": ModelWindow(200_000, 100_000),
    "o4-mini": ModelWindow(200_000, 100_000),
    "claude-opus-4": ModelWindow(200_000, 32_000),
    "claude-opus-4-5": ModelWindow(200_000, 64_000),
    "claude-sonnet-4": ModelWindow(200_000, 64_000),
    "claude-haiku-4-5": ModelWindow(200_000, 64_000),
    "claude-3-7-sonnet": ModelWindow(200_000, 64_000),
    "claude-3-5-haiku": ModelWindow(200_000, 8_192),
}


def window_for(model_id: str, table: dict[str, ModelWindow] | None = None) -> ModelWindow:
    """The window of the longest prefix of `model_id` in the table, else `DEFAULT_WINDOW`."""
    entries = WINDOWS if table is None else {**WINDOWS, **table}
    matches = [prefix for prefix in entries if model_id == prefix or model_id.startswith(prefix)]
    if not matches:
        return DEFAULT_WINDOW
    return entries[max(matches, key=len)]
