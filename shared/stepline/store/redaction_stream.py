"""Masking secrets in streamed deltas, with the state to catch one split across two chunks.

The `Redactor` masks a whole value; a stream sends text and tool input in pieces, so a key such as
`sk-ant-…` can arrive as `sk-an` + `t-…`, and `{"password": "hunter2"}` as `{"pass` + `word": "hun…`.
Masking each piece alone lets both through. `DeltaMasker` keeps, per text/reasoning block and per
tool call, what is needed to decide:

- `ShapeMasker` (text, reasoning, and strings inside tool input): holds back the trailing run of
  characters a credential can be made of (and a `Bearer ` before it) until the next delta shows
  where it ends; everything before it is masked by shape and sent. So the output is the masked
  text, at most one word late.
- `JsonMasker` (tool input, `tool-input-delta`): follows the JSON as it streams; the value under a
  sensitive key is replaced by `"*****"` the moment it starts (whatever its type, as the
  `Redactor` does for `tool-input-available`), and its characters are swallowed until it ends.

Whatever is held back is sent when its block ends (`text-end`, `tool-input-available`, …), at a
step or stream boundary, and on `flush()`, so a step that fails mid-word keeps its partial text.
Pure: the standard library and `stepline` only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from ..protocol.chunks import (
    ReasoningDeltaChunk,
    ReasoningEndChunk,
    TextDeltaChunk,
    TextEndChunk,
    ToolInputDeltaChunk,
    UIMessageChunk,
)
from .redaction import Redactor

__all__ = ["DeltaMasker", "JsonMasker", "ShapeMasker"]

_TOKEN_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.~+/=")
"""The characters a credential the `Redactor` knows by shape can be made of."""
_BEARER_TAIL: Final = re.compile(r"\bBearer\s+\Z", re.IGNORECASE)
_WORD: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_STARTS: Final = (("sk-", frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")),)
_AWS_STARTS: Final = ("AKIA", "ASIA")
_AWS_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _could_begin_a_credential(tail: str, index: int) -> bool:
    """Whether the token characters of `tail` from `index` are, or may grow into, a known credential.

    The shapes the `Redactor` masks: `sk-…`, `AKIA…`/`ASIA…`, or the `Bearer` before a token.
    """
    rest = tail[index : index + 7]
    if len(tail) - index <= 6 and (
        any(start.startswith(rest) for start in ("sk-", *_AWS_STARTS)) or "bearer".startswith(rest.lower())
    ):
        return True
    if tail.startswith("sk-", index):
        return all(c in _STARTS[0][1] for c in tail[index + 3 :])
    if tail.startswith(_AWS_STARTS, index):
        return all(c in _AWS_CHARS for c in tail[index + 4 :])
    return False


def _held_from(tail: str) -> int:
    """Where, in a trailing run of token characters, a credential could begin (`len(tail)`: nowhere).

    A credential starts at a word boundary, so only the run's start and the places after a
    non-word character (`.`, `-`, `/`, …) are candidates; text before the first candidate that
    could still grow into one is certain, and is sent at once (a first delta is not held back
    for nothing: a word such as `Hi` cannot become a key).
    """
    for index in range(len(tail)):
        if (index == 0 or tail[index - 1] not in _WORD) and _could_begin_a_credential(tail, index):
            return index
    return len(tail)


_BEARER_WINDOW: Final = 64
_LONGEST_HELD: Final = 4096
"""A run of token characters longer than this is let through (masked as it stands)."""
_TOOL_END_CHUNKS: Final = frozenset(
    {"tool-input-available", "tool-input-error", "tool-output-available", "tool-output-error"}
)


class ShapeMasker:
    """Masks credentials by shape in a text that arrives in pieces."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._held = ""

    def feed(self, delta: str) -> str:
        """The masked text that is certain now (the trailing token is held back)."""
        text = self._held + delta
        start = len(text)
        while start > 0 and text[start - 1] in _TOKEN_CHARS:  # linear in the tail, never the text
            start -= 1
        window = max(0, start - _BEARER_WINDOW)
        bearer = _BEARER_TAIL.search(text[window:start])
        if bearer is not None:
            start = window + bearer.start()
        else:
            start += _held_from(text[start:])
        if len(text) - start > _LONGEST_HELD:
            start = len(text)
        self._held = text[start:]
        return self._redactor.redact_text(text[:start])

    def flush(self) -> str:
        """What is held back, masked."""
        text, self._held = self._held, ""
        return self._redactor.redact_text(text)


class JsonMasker:
    """Masks a JSON text that arrives in pieces: sensitive keys' values, and credentials by shape."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._shapes = ShapeMasker(redactor)
        self._stack: list[str] = []  # "{" or "[" for each open container
        self._in_string = False
        self._escape = False
        self._is_key = False
        self._expect_key = False
        self._key = ""
        self._last_key: str | None = None
        self._awaiting_value = False
        self._masking: str | None = None  # "string" | "container" | "literal" while swallowing a value
        self._depth = 0

    def feed(self, delta: str) -> str:
        """The masked JSON text that is certain now."""
        out: list[str] = []
        for char in delta:
            self._step(char, out)
        return self._shapes.feed("".join(out))

    def flush(self) -> str:
        """What is held back, masked."""
        return self._shapes.flush()

    def _step(self, char: str, out: list[str]) -> None:
        if self._masking is not None and self._swallow(char):
            return
        if self._in_string:
            out.append(char)
            self._string_char(char)
            return
        if self._awaiting_value and not char.isspace():
            self._awaiting_value = False
            if self._last_key is not None and self._redactor.is_sensitive(self._last_key):
                self._start_mask(char, out)
                return
        out.append(char)
        self._structure(char)

    def _string_char(self, char: str) -> None:
        if self._escape:
            self._escape = False
        elif char == "\\":
            self._escape = True
        elif char == '"':
            self._in_string = False
            if self._is_key:
                self._last_key, self._expect_key = self._key, False
            return
        if self._is_key:
            self._key += char

    def _structure(self, char: str) -> None:
        if char == '"':
            self._in_string, self._escape = True, False
            self._is_key = bool(self._stack) and self._stack[-1] == "{" and self._expect_key
            self._key = ""
        elif char in "{[":
            self._stack.append(char)
            self._expect_key = char == "{"
        elif char in "}]":
            if self._stack:
                self._stack.pop()
        elif char == ":":
            self._awaiting_value = True
        elif char == ",":
            self._expect_key = bool(self._stack) and self._stack[-1] == "{"

    def _start_mask(self, char: str, out: list[str]) -> None:
        out.append(f'"{self._redactor.mask}"')
        if char == '"':
            self._masking, self._in_string, self._escape = "string", True, False
        elif char in "{[":
            self._masking, self._depth, self._in_string = "container", 1, False
        else:
            self._masking = "literal"

    def _swallow(self, char: str) -> bool:
        """Consume a character of a masked value; False when it ends the value and is not part of it."""
        if self._in_string:
            if self._escape:
                self._escape = False
            elif char == "\\":
                self._escape = True
            elif char == '"':
                self._in_string = False
                if self._masking == "string":
                    self._masking = None
            return True
        if self._masking == "literal":
            if char in ",}]" or char.isspace():
                self._masking = None
                return False
            return True
        if char == '"':
            self._in_string, self._escape = True, False
        elif char in "{[":
            self._depth += 1
        elif char in "}]":
            self._depth -= 1
            if self._depth == 0:
                self._masking = None
        return True


class DeltaMasker:
    """Masks the deltas of a UI message stream, chunk by chunk, keeping state per block and tool call."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        self._redactor = redactor or Redactor()
        self._text: dict[tuple[str, str], ShapeMasker] = {}
        self._tools: dict[str, JsonMasker] = {}

    def mask(self, chunks: Iterable[UIMessageChunk]) -> list[UIMessageChunk]:
        """The chunks with their deltas masked (a held-back tail comes out before its block's end)."""
        result: list[UIMessageChunk] = []
        for chunk in chunks:
            result.extend(self._one(chunk))
        return result

    def flush(self) -> list[UIMessageChunk]:
        """Deltas for everything held back (the stream pauses or the step ends here)."""
        result = [_text_delta(kind, block, masker.flush()) for (kind, block), masker in self._text.items()]
        result += [
            ToolInputDeltaChunk(tool_call_id=call, input_text_delta=m.flush()) for call, m in self._tools.items()
        ]
        self._text.clear()
        self._tools.clear()
        return [chunk for chunk in result if _delta_of(chunk)]

    def _one(self, chunk: UIMessageChunk) -> list[UIMessageChunk]:
        if isinstance(chunk, TextDeltaChunk | ReasoningDeltaChunk):
            kind = "text" if isinstance(chunk, TextDeltaChunk) else "reasoning"
            masker = self._text.setdefault((kind, chunk.id), ShapeMasker(self._redactor))
            masked = masker.feed(chunk.delta)
            keep = masked or chunk.provider_metadata is not None
            return [chunk.model_copy(update={"delta": masked})] if keep else []
        if isinstance(chunk, TextEndChunk | ReasoningEndChunk):
            kind = "text" if isinstance(chunk, TextEndChunk) else "reasoning"
            masker = self._text.pop((kind, chunk.id), None)
            rest = masker.flush() if masker is not None else ""
            return [*([_text_delta(kind, chunk.id, rest)] if rest else []), chunk]
        if isinstance(chunk, ToolInputDeltaChunk):
            json_masker = self._tools.setdefault(chunk.tool_call_id, JsonMasker(self._redactor))
            masked = json_masker.feed(chunk.input_text_delta)
            return [chunk.model_copy(update={"input_text_delta": masked})] if masked else []
        call_id = getattr(chunk, "tool_call_id", None)
        if chunk.type in _TOOL_END_CHUNKS and isinstance(call_id, str) and call_id in self._tools:
            rest = self._tools.pop(call_id).flush()
            return [*([ToolInputDeltaChunk(tool_call_id=call_id, input_text_delta=rest)] if rest else []), chunk]
        if chunk.type in ("finish-step", "reset-step", "finish", "error", "abort"):
            return [*self.flush(), chunk]
        return [chunk]


def _text_delta(kind: str, block: str, text: str) -> UIMessageChunk:
    return TextDeltaChunk(id=block, delta=text) if kind == "text" else ReasoningDeltaChunk(id=block, delta=text)


def _delta_of(chunk: UIMessageChunk) -> str:
    if isinstance(chunk, ToolInputDeltaChunk):
        return chunk.input_text_delta
    return chunk.delta if isinstance(chunk, TextDeltaChunk | ReasoningDeltaChunk) else ""
