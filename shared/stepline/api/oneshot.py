"""The two text streams beside the chat: `useCompletion` and `experimental_useObject`.

Both are one model call through the same loop and model configuration as a chat (no tools, no
run, nothing stored): the response is the model's text as a plain UTF-8 stream.

- `POST /api/completion` `{prompt, ...body}` → the completion text (`useCompletion` with
  `streamProtocol: "text"`); with `?protocol=data` the same completion as a UI
  Message Stream (the stock `useCompletion` default, `streamProtocol: "data"`).
- `POST /api/object` `{input, schema, output?, ...body}` → the model's JSON text, asked for with
  structured output (`response_format` with the schema), which the client parses as it arrives and
  validates at the end.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ..loop.stream_text import stream_text
from ..protocol import stream_parts as sp
from ..protocol._json import dumps
from ..protocol.sse import DONE, encode_chunk
from ..runtime.services import Services

__all__ = ["CompletionRequest", "ObjectOutput", "ObjectRequest", "completion_sse", "completion_text", "object_text"]

_LOG = logging.getLogger("stepline.api")
MAX_PROMPT_CHARS = 200_000


class CompletionRequest(BaseModel):
    """What `useCompletion` sends (other keys of `body` are allowed and ignored)."""

    model_config = ConfigDict(extra="allow")

    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS)


class ObjectOutput(BaseModel):
    """`output` of `experimental_useObject`: an object of the schema (the default), or any JSON."""

    model_config = ConfigDict(extra="allow")

    type: Literal["object", "no-schema"] = "object"
    schema_: dict[str, JsonValue] | None = Field(default=None, alias="schema")


class ObjectRequest(BaseModel):
    """What `experimental_useObject` sends."""

    model_config = ConfigDict(extra="allow")

    input: JsonValue
    schema_: dict[str, JsonValue] = Field(alias="schema")
    output: ObjectOutput = Field(default_factory=ObjectOutput)


def _default_agent(services: Services) -> dict[str, Any]:
    """The default agent's model and static instructions (a one-shot call has no run context)."""
    agent = services.agent_set.default
    instructions = None if callable(agent.instructions) else agent.instructions
    return {"model": services.model_for(agent), "instructions": instructions}


async def _text(services: Services, prompt: str, **options: Any) -> AsyncIterator[str]:
    result = stream_text(prompt=prompt, **_default_agent(services), **options)
    async for part in result.full_stream:
        if isinstance(part, sp.TextDelta):
            yield part.text
        elif isinstance(part, sp.StreamError):
            _LOG.warning("one-shot model call failed: %s", type(part.error).__name__)
            return


def completion_text(services: Services, request: CompletionRequest) -> AsyncIterator[str]:
    """The completion of `request.prompt`, as text pieces."""
    return _text(services, request.prompt)


async def completion_sse(services: Services, request: CompletionRequest) -> AsyncIterator[str]:
    """The completion of `request.prompt` as a UI Message Stream (SSE frames, `[DONE]` at the end)."""
    result = stream_text(prompt=request.prompt, **_default_agent(services))
    async for chunk in result.ui_message_stream():
        yield encode_chunk(chunk)
    yield DONE


def object_text(services: Services, request: ObjectRequest) -> AsyncIterator[str]:
    """The model's JSON for `request.input`, as text pieces."""
    schema = request.schema_ if request.output.type == "object" else {"type": "object"}
    prompt = request.input if isinstance(request.input, str) else dumps(request.input)
    return _text(services, prompt, output_schema=schema)
