"""The Anthropic Messages API as a `LanguageModel`, on the official `anthropic` SDK.

    model      the `LanguageModel`: the thin I/O layer and SDK errors -> ModelCallError
    options    providerOptions models, validation and warnings
    content,   ModelMessage list + call options -> the Messages request
    prompt,
    convert
    traits     what a model id supports (documents, structured output, adaptive thinking, server tools)
    stream     server-sent events -> V4 stream parts
    fields     reading the events' JSON loosely, leaving out unknown fields (shared by the above)
    usage      the message's finish reason and usage in V4 terms
    server_tools, server_results, server_blocks
               Anthropic's server tools: request entries, streamed results, blocks sent back
    tools      the server tools as `Tool`s an Agent lists (`anthropic_tools.web_search(...)`)

Importing this package imports the `anthropic` SDK; the registry loads it only when an Anthropic
model is asked for.
"""

from . import tools
from .model import DEFAULT_MAX_TOKENS, AnthropicModel, to_model_call_error

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicModel", "to_model_call_error", "tools"]
