"""Choose a model from configuration: `provider:model-id`.

    openai:gpt-5.1                   OpenAI (Responses API, falling back to Chat Completions)
    anthropic:claude-sonnet-4-5      Anthropic Messages API
    scripted:path/to/script.json     the scripted model (tests and demos; no network)

Credentials and endpoints come from each SDK's standard variables (`OPENAI_API_KEY`,
`OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`). Provider SDKs are imported only
when a model of theirs is asked for, so the core never loads them.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from ..errors import StepLineError
from .base import LanguageModel
from .scripted import ScriptedModel

__all__ = ["DEMO_SCRIPT", "UnknownModelError", "resolve_model"]

DEMO_SCRIPT = Path(__file__).resolve().parents[1] / "samples" / "demo-script.json"
"""The scripted demo used when no model is configured."""

_PROVIDERS: dict[str, tuple[str, str]] = {
    "openai": ("stepline.llm.openai", "OpenAIModel"),
    "anthropic": ("stepline.llm.anthropic", "AnthropicModel"),
}


class UnknownModelError(StepLineError):
    """A model specification that names no known provider, or is malformed."""


def resolve_model(spec: str, **options: Any) -> LanguageModel:
    """The model for `provider:model-id`; `options` go to the provider's constructor."""
    provider, separator, model_id = spec.partition(":")
    if not separator or not model_id:
        raise UnknownModelError(f"model {spec!r} is not of the form provider:model-id (e.g. openai:gpt-5.1)")
    if provider == "scripted":
        path = Path(model_id)
        if not path.is_file():
            raise UnknownModelError(f"scripted model: no script file at {model_id}")
        return ScriptedModel.from_file(path)
    if provider not in _PROVIDERS:
        known = ", ".join(["scripted", *_PROVIDERS])
        raise UnknownModelError(f"unknown model provider {provider!r} (known: {known})")
    module_name, class_name = _PROVIDERS[provider]
    model_class = getattr(importlib.import_module(module_name), class_name)
    return model_class(model_id, **options)
