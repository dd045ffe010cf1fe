"""Best-effort parsing of an incomplete JSON text that grows by appending, in linear time.

While a tool call's input streams in, clients show the best partial value of the text so far:
`{"city":"Par` reads as `{"city": "Par"}`. The AI SDK (`packages/ai/src/util/fix-json.ts` and
`parse-partial-json.ts`, `ai@7.0.173`) repairs the *whole* buffer on every delta, which is quadratic
in the number of deltas. `PartialJson` gives the same values but keeps its scanner state between
appends, scans each character once (and strings in bulk), and parses only when a value is asked
for. So a 1 MB input streamed in 10,000 deltas costs one scan, plus one parse per snapshot read.

The repair rule (same as the SDK's): cut the text after the last character that can end a valid
prefix, then close whatever is still open (string, literal, array, object).
"""

from __future__ import annotations

import re
from typing import Any, Final

from ._json import loads_strict

__all__ = ["UNPARSEABLE", "PartialJson", "parse_partial_json"]

UNPARSEABLE: Final = object()
"""Returned by `PartialJson.value()` when not even the repaired text parses (JavaScript `undefined`)."""

# Scanner states, as small ints for speed.
_ROOT, _FINISH, _STRING, _STRING_ESCAPE, _STRING_UNICODE, _LITERAL, _NUMBER = range(7)
_OBJECT_START, _OBJECT_KEY, _OBJECT_AFTER_KEY, _OBJECT_BEFORE_VALUE, _OBJECT_AFTER_VALUE, _OBJECT_AFTER_COMMA = range(
    7, 13
)
_ARRAY_START, _ARRAY_AFTER_VALUE, _ARRAY_AFTER_COMMA = range(13, 16)

_OBJECT_STATES: Final = frozenset(
    {_OBJECT_KEY, _OBJECT_AFTER_KEY, _OBJECT_AFTER_COMMA, _OBJECT_START, _OBJECT_BEFORE_VALUE, _OBJECT_AFTER_VALUE}
)
_ARRAY_STATES: Final = frozenset({_ARRAY_START, _ARRAY_AFTER_COMMA, _ARRAY_AFTER_VALUE})
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_DIGITS: Final = frozenset("0123456789")
_STRING_SPECIAL: Final = re.compile(r'["\\]')
_KEY_END: Final = re.compile(r'"')
_LITERALS: Final = ("true", "false", "null")


class PartialJson:
    """An appendable JSON text with its best-effort value."""

    __slots__ = ("_literal", "_pieces", "_scanned", "_stack", "_text", "_unicode_digits", "_valid_end")

    def __init__(self, text: str = "") -> None:
        self._pieces: list[str] = [text] if text else []
        self._text = text
        self._scanned = 0
        self._stack: list[int] = [_ROOT]
        self._valid_end = 0  # length of the longest valid prefix (the SDK's lastValidIndex + 1)
        self._literal = ""
        self._unicode_digits = 0

    def append(self, delta: str) -> None:
        """Add text. Nothing is scanned or parsed until `text()` or `value()` is called."""
        if delta:
            self._pieces.append(delta)

    def text(self) -> str:
        """The whole text so far."""
        if len(self._pieces) > 1:
            self._text = "".join(self._pieces)
            self._pieces = [self._text]
        elif self._pieces:
            self._text = self._pieces[0]
        return self._text

    def value(self) -> Any:
        """The value of the text, or of its repaired prefix; `UNPARSEABLE` when neither parses."""
        text = self.text()
        try:
            return loads_strict(text)
        except ValueError:
            pass
        self._scan(text)
        try:
            return loads_strict(self._repaired(text))
        except ValueError:
            return UNPARSEABLE

    # -- the scanner -------------------------------------------------------------------------

    def _repaired(self, text: str) -> str:
        closing: list[str] = []
        for state in reversed(self._stack):
            if state == _STRING:
                closing.append('"')
            elif state in _OBJECT_STATES:
                closing.append("}")
            elif state in _ARRAY_STATES:
                closing.append("]")
            elif state == _LITERAL:
                closing.append(_complete_literal(self._literal))
        return text[: self._valid_end] + "".join(closing)

    def _value_start(self, char: str, i: int, swap: int) -> None:
        stack = self._stack
        if char == '"':
            self._valid_end = i + 1
            stack[-1] = swap
            stack.append(_STRING)
        elif char in "ftn":
            self._valid_end = i + 1
            self._literal = char
            stack[-1] = swap
            stack.append(_LITERAL)
        elif char == "-":
            stack[-1] = swap
            stack.append(_NUMBER)
        elif char in _DIGITS:
            self._valid_end = i + 1
            stack[-1] = swap
            stack.append(_NUMBER)
        elif char == "{":
            self._valid_end = i + 1
            stack[-1] = swap
            stack.append(_OBJECT_START)
        elif char == "[":
            self._valid_end = i + 1
            stack[-1] = swap
            stack.append(_ARRAY_START)

    def _after_object_value(self, char: str, i: int) -> None:
        if char == ",":
            self._stack[-1] = _OBJECT_AFTER_COMMA
        elif char == "}":
            self._valid_end = i + 1
            self._stack.pop()

    def _after_array_value(self, char: str, i: int) -> None:
        if char == ",":
            self._stack[-1] = _ARRAY_AFTER_COMMA
        elif char == "]":
            self._valid_end = i + 1
            self._stack.pop()

    def _close_scalar(self, char: str, i: int) -> None:
        """A number or literal ended at `char`; let the enclosing container see that character."""
        self._stack.pop()
        top = self._stack[-1] if self._stack else None
        if top == _OBJECT_AFTER_VALUE:
            self._after_object_value(char, i)
        elif top == _ARRAY_AFTER_VALUE:
            self._after_array_value(char, i)

    def _scan(self, text: str) -> None:  # noqa: C901 - one state machine, kept in one place on purpose
        i = self._scanned
        end = len(text)
        stack = self._stack
        while i < end:
            state = stack[-1] if stack else _FINISH
            if state == _STRING:
                # Bulk path: everything up to the next quote or backslash is plain string content.
                match = _STRING_SPECIAL.search(text, i)
                if match is None:
                    self._valid_end = end
                    i = end
                    break
                j = match.start()
                if j > i:
                    self._valid_end = j
                if text[j] == '"':
                    stack.pop()
                    self._valid_end = j + 1
                else:
                    stack.append(_STRING_ESCAPE)
                i = j + 1
                continue
            if state == _OBJECT_KEY:
                match = _KEY_END.search(text, i)
                if match is None:
                    i = end
                    break
                stack[-1] = _OBJECT_AFTER_KEY
                i = match.start() + 1
                continue
            char = text[i]
            if state == _ROOT:
                self._value_start(char, i, _FINISH)
            elif state == _OBJECT_START:
                if char == '"':
                    stack[-1] = _OBJECT_KEY
                elif char == "}":
                    self._valid_end = i + 1
                    stack.pop()
            elif state == _OBJECT_AFTER_COMMA:
                if char == '"':
                    stack[-1] = _OBJECT_KEY
            elif state == _OBJECT_AFTER_KEY:
                if char == ":":
                    stack[-1] = _OBJECT_BEFORE_VALUE
            elif state == _OBJECT_BEFORE_VALUE:
                self._value_start(char, i, _OBJECT_AFTER_VALUE)
            elif state == _OBJECT_AFTER_VALUE:
                self._after_object_value(char, i)
            elif state == _ARRAY_START:
                if char == "]":
                    self._valid_end = i + 1
                    stack.pop()
                else:
                    self._value_start(char, i, _ARRAY_AFTER_VALUE)
            elif state == _ARRAY_AFTER_VALUE:
                if char == ",":
                    stack[-1] = _ARRAY_AFTER_COMMA
                elif char == "]":
                    self._valid_end = i + 1
                    stack.pop()
                else:
                    self._valid_end = i + 1
            elif state == _ARRAY_AFTER_COMMA:
                self._value_start(char, i, _ARRAY_AFTER_VALUE)
            elif state == _STRING_ESCAPE:
                stack.pop()
                if char == "u":
                    self._unicode_digits = 0
                    stack.append(_STRING_UNICODE)
                else:
                    self._valid_end = i + 1
            elif state == _STRING_UNICODE:
                if char in _HEX:
                    self._unicode_digits += 1
                    if self._unicode_digits == 4:
                        stack.pop()
                        self._valid_end = i + 1
            elif state == _NUMBER:
                if char in _DIGITS:
                    self._valid_end = i + 1
                elif char in "eE-.":
                    pass
                elif char in ",}]":
                    self._close_scalar(char, i)
                else:
                    stack.pop()
            elif state == _LITERAL:
                candidate = self._literal + char
                if any(literal.startswith(candidate) for literal in _LITERALS):
                    self._literal = candidate
                    self._valid_end = i + 1
                else:
                    self._close_scalar(char, i)
            i += 1
        self._scanned = end


def _complete_literal(partial: str) -> str:
    for literal in _LITERALS:
        if literal.startswith(partial):
            return literal[len(partial) :]
    return ""


def parse_partial_json(text: str) -> Any:
    """One-shot form of `PartialJson(text).value()`."""
    return PartialJson(text).value()
