"""The Anthropic Messages API as a `LanguageModel`, on the official `anthropic` SDK.

    model      the `LanguageModel`: the thin I/O layer and SDK errors -> ModelCallError
    options    providerOptions models, validation and warnings
    content,   ModelMessage list + call options -> the Messages request
    prompt,
    convert
    stream     server-sent events -> V4 stream parts

Importing this package imports the `anthropic` SDK; the registry loads it only when an Anthropic
model is asked for.
"""

from .model import DEFAULT_MAX_TOKENS, AnthropicModel, to_model_call_error

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicModel", "to_model_call_error"]
