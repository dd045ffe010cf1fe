"""Masking secrets before anything is persisted or logged (docs/data-model.md, "Secrets").

Two rules, applied to a deep copy (the input is never changed):

1. By key: the value under a sensitive key is replaced by the mask, whatever its type. Keys are
   compared case-insensitively with `-` and `_` ignored, so `Authorization`, `x-api-key`,
   `apiKey` and `API_KEY` all match. The built-in names are `SENSITIVE_KEYS`; `token` matches
   only the exact key (`max_tokens` or `tokenCount` are not secrets). Configured names are added.
2. By shape: inside every string, bearer/basic credentials and API keys that look like OpenAI
   (`sk-…`), Anthropic (`sk-ant-…`) or AWS access keys (`AKIA…`/`ASIA…`) are replaced.

Why not Powertools' `DataMasking`: the store is part of the pure core, which imports only the
standard library and pydantic (the same rule `tests/test_static_checks.py` enforces for the
protocol). `DataMasking.erase` also needs the field paths spelled out in advance (JSONPath),
while tool inputs and outputs are arbitrary JSON where a secret can sit at any depth or inside
a string. Our mask is the same `*****` it writes, so logs read alike.

How a message's parts are masked and what of their reasoning is kept is in `stored_parts`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, cast

__all__ = [
    "DEFAULT_MASK",
    "SENSITIVE_KEYS",
    "ReasoningPolicy",
    "RedactingFilter",
    "Redactor",
]

DEFAULT_MASK: Final = "*****"

SENSITIVE_KEYS: Final = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "api_key",
        "access_token",
        "refresh_token",
        "id_token",
        "session_token",
        "x-amz-security-token",
        "aws_secret_access_key",
        "password",
        "secret",
        "client_secret",
        "secret_key",
        "auth_token",
        "private_key",
        "token",
    }
)
"""Keys whose values are always masked (compared case-insensitively, ignoring `-` and `_`)."""

_PATTERNS: Final = (
    # `Bearer <token>` (an Authorization header quoted in text); the scheme word stays readable.
    # Eight characters at least, so prose such as "the bearer of" is left alone.
    re.compile(r"\b(?P<keep>Bearer\s+)[A-Za-z0-9\-._~+/]{8,}=*", re.IGNORECASE),
    # Anthropic (`sk-ant-api03-…`) and OpenAI (`sk-…`, `sk-proj-…`) API keys.
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    # AWS access key ids: long-lived (AKIA) and temporary (ASIA).
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
)


def _may_hold_a_credential(text: str) -> bool:
    """False when no pattern can match: each needs one of these literals.

    A substring test runs at memory speed, the patterns at ~1 ms per 10 KB, and a long run masks
    every stored part again at each step. `bearer` is matched in any case, as its pattern is.
    """
    return "sk-" in text or "AKIA" in text or "ASIA" in text or "bearer" in text.lower()


_STANDARD_RECORD_KEYS: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}

ReasoningPolicy = Literal["keep", "drop_text"]


def _normalise(key: str) -> str:
    return key.lower().replace("-", "").replace("_", "")


class Redactor:
    """Masks secrets in JSON-like values (dicts, lists, tuples, strings; other values pass through).

    Example:
        ```python
        redactor = Redactor(fields=("ssn", "phone"))
        redactor.redact({"headers": {"Authorization": "Bearer abc"}, "ssn": "123"})
        # {"headers": {"Authorization": "*****"}, "ssn": "*****"}
        ```
    """

    def __init__(self, fields: Iterable[str] = (), mask: str = DEFAULT_MASK) -> None:
        self.mask = mask
        self._keys = frozenset(_normalise(key) for key in (*SENSITIVE_KEYS, *fields))

    def is_sensitive(self, key: str) -> bool:
        """Whether values under `key` are masked."""
        return _normalise(key) in self._keys

    def redact_text(self, text: str) -> str:
        """`text` with every credential-shaped substring masked."""
        if not _may_hold_a_credential(text):
            return text
        for pattern in _PATTERNS:
            text = pattern.sub(self._replace, text)
        return text

    def _replace(self, match: re.Match[str]) -> str:
        return (match.groupdict().get("keep") or "") + self.mask

    def redact(self, value: Any) -> Any:
        """A copy of `value` with sensitive keys' values and credential-shaped substrings masked."""
        return self._redact(value, set())

    def _redact(self, value: object, path: set[int]) -> Any:
        if isinstance(value, str):
            return self.redact_text(value)
        if not isinstance(value, Mapping | list | tuple):
            return value
        marker = id(cast(object, value))
        if marker in path:  # a container that holds itself (possible in log arguments)
            return "<cycle>"
        path.add(marker)
        try:
            if isinstance(value, Mapping):
                entries = cast(Mapping[object, object], value)
                return {key: self._redact_entry(key, item, path) for key, item in entries.items()}
            items = [self._redact(item, path) for item in cast(Iterable[object], value)]
            return items if isinstance(value, list) else tuple(items)
        finally:
            path.discard(marker)

    def _redact_entry(self, key: object, value: object, path: set[int]) -> Any:
        return self.mask if isinstance(key, str) and self.is_sensitive(key) else self._redact(value, path)


class RedactingFilter(logging.Filter):
    """A logging filter that masks secrets in a record's message, arguments and `extra` fields.

    Attach it to handlers (a filter on a logger does not see records propagated from its children):

        handler.addFilter(RedactingFilter())
    """

    def __init__(self, redactor: Redactor | None = None, name: str = "") -> None:
        super().__init__(name)
        self.redactor = redactor or Redactor()

    def filter(self, record: logging.LogRecord) -> bool:
        redactor = self.redactor
        record.msg = redactor.redact(record.msg)
        if isinstance(record.args, Mapping):
            record.args = cast(Mapping[str, object], redactor.redact(record.args))
        elif isinstance(record.args, tuple):
            record.args = cast(tuple[object, ...], redactor.redact(record.args))
        # `logger.info(..., extra={...})` puts fields straight on the record; structured loggers print them.
        for key, value in list(vars(record).items()):
            if key not in _STANDARD_RECORD_KEYS:
                setattr(record, key, redactor.mask if redactor.is_sensitive(key) else redactor.redact(value))
        return True
