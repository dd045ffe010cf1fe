"""Choose a model from configuration: `provider:model-id`.

    openai:gpt-5.1                   OpenAI (Responses API, falling back to Chat Completions)
    anthropic:claude-sonnet-4-5      Anthropic Messages API
    scripted:path/to/script.json     the scripted model (tests and demos; no network): a file with a
                                     top-level "scripts" key is a script book (`ScriptBook`, chosen by
                                     the prompt alone), any other a script (`ScriptedModel`)

Credentials and endpoints come from each SDK's standard variables (`OPENAI_API_KEY`,
`OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`). Provider SDKs are imported only
when a model of theirs is asked for, so the core never loads them; `deferred_model` puts even that
off until the model is called, for a process that may never call it (a worker that only parks or
ends runs, the API: they name the model in a run's metadata, nothing more).
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ..errors import StepLineError
from ..protocol._json import loads_strict
from .base import LanguageModel, ModelCallOptions, ModelCapabilities
from .stream_parts import ModelStreamPart

__all__ = [
    "DEMO_BOOK",
    "DEMO_SCRIPT",
    "DeferredModel",
    "UnknownModelError",
    "deferred_model",
    "import_provider",
    "resolve_model",
    "resolve_with_timeout",
]

_SAMPLES = Path(__file__).resolve().parents[1] / "samples"

DEMO_SCRIPT = _SAMPLES / "demo-script.json"
"""The scripted demo `stepline run` uses when no model is configured (one run, the demo tools)."""

DEMO_BOOK = _SAMPLES / "demo-book.json"
"""The scripted demo book for the default toolset (`stepline.tools.workspace`): stateless, so a
server or Lambda can play it for any number of conversations."""

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
        data: Any = loads_strict(path.read_text(encoding="utf-8"))
        from .script_book import ScriptBook  # only for scripted models: no other function pays for it
        from .scripted import ScriptedModel

        if isinstance(data, dict) and "scripts" in data:
            return ScriptBook.from_book(data, model_id=path.stem)
        return ScriptedModel.from_script(data, model_id=path.stem)
    if provider not in _PROVIDERS:
        known = ", ".join(["scripted", *_PROVIDERS])
        raise UnknownModelError(f"unknown model provider {provider!r} (known: {known})")
    module_name, class_name = _PROVIDERS[provider]
    model_class = getattr(importlib.import_module(module_name), class_name)
    return model_class(model_id, **options)


def import_provider(spec: str) -> None:
    """Import the SDK adapter of `spec`'s provider without building a model (SnapStart's priming)."""
    provider = spec.partition(":")[0]
    if provider in _PROVIDERS:
        importlib.import_module(_PROVIDERS[provider][0])


class DeferredModel:
    """A provider's model that imports its SDK and is built on first use (its capabilities or a call).

    Its provider and model id come from the specification, so naming the model costs nothing.
    """

    def __init__(self, spec: str, options: dict[str, Any]) -> None:
        self._spec = spec
        self._options = options
        self._provider, _, self._model_id = spec.partition(":")
        self._model: LanguageModel | None = None

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def resolved(self) -> LanguageModel | None:
        """The model once it was built (None until then)."""
        return self._model

    def model(self) -> LanguageModel:
        if self._model is None:
            self._model = resolve_model(self._spec, **self._options)
        return self._model

    @property
    def capabilities(self) -> ModelCapabilities:
        return self.model().capabilities

    def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        return self.model().stream(options)

    async def aclose(self) -> None:
        """Release the built model's connections (`close_model`); nothing when it was never built."""
        if self._model is not None:
            from .base import close_model

            await close_model(self._model)


def resolve_with_timeout(spec: str, timeout: float | None) -> LanguageModel:
    """`resolve_model` with an agent's request timeout (None: the provider's default).

    The `ModelResolver` of a host that adds no keys (`stepline dev`, `stepline run`, tests).
    """
    return resolve_model(spec, **({"timeout": timeout} if timeout is not None else {}))


def deferred_model(spec: str, **options: Any) -> LanguageModel:
    """`resolve_model`, except that a provider's SDK is imported when the model is first used.

    The specification is checked now (form and provider), so a wrong one still fails at start-up;
    a scripted model is built at once (it imports nothing).
    """
    provider, separator, model_id = spec.partition(":")
    if provider == "scripted" or not separator or not model_id or provider not in _PROVIDERS:
        return resolve_model(spec, **options)
    return DeferredModel(spec, options)
