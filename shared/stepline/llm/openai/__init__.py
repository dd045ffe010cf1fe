"""OpenAI language models on the official `openai` SDK: Responses (default), Chat Completions, auto.

    model               the `LanguageModel`s: the thin I/O layer over the pure modules below
    options             providerOptions models, validation and warnings
    capabilities        what each API and model family accepts
    tools               OpenAI's built-in tools (web search, file search, code interpreter,
                        image generation) as loop `Tool`s an agent lists
    prompt,             ModelMessage list + call options -> request keyword arguments
    responses_input,
    provider_items,
    responses_tools,
    responses_convert,
    chat_convert
    responses_stream,   provider events -> V4 stream parts
    responses_tool_stream,
    chat_stream
    stream_common       usage and in-stream error frames for both stream state machines
    errors              SDK exceptions -> ModelCallError
    clients             shared SDK clients (`max_retries=0`) and the Responses-probe cache

Importing this package imports the `openai` SDK; the registry loads it only when an OpenAI model
is asked for.
"""

from .clients import OpenAIApiCache, aclose_openai_clients
from .model import DEFAULT_BASE_URL, DEFAULT_TIMEOUT_SECONDS, OpenAIChatModel, OpenAIModel, OpenAIResponsesModel

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_TIMEOUT_SECONDS",
    "OpenAIApiCache",
    "OpenAIChatModel",
    "OpenAIModel",
    "OpenAIResponsesModel",
    "aclose_openai_clients",
]
