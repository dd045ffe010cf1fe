"""What of a message's parts is stored: secrets masked (`redact_parts`), reasoning kept or blanked.

`redact_parts` masks the parts as the event log masks the chunks they were streamed as (a tool's
`rawInput` through the stream's `JsonMasker`, so both agree). Reasoning retention
(`strip_reasoning`) is a product and compliance choice: `drop_text` blanks reasoning text but
keeps each part, its order and its `providerMetadata` (the signatures a provider needs to accept
the conversation back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..protocol._json import json_copy
from .redaction import ReasoningPolicy, Redactor
from .redaction_stream import JsonMasker

__all__ = ["redact_parts", "strip_reasoning"]

_TOOL_FIELDS: Final = ("input", "output", "errorText", "approval")
_TEXT_PARTS: Final = ("text", "reasoning")


def redact_parts(parts: Sequence[Mapping[str, Any]], redactor: Redactor | None = None) -> list[dict[str, Any]]:
    """Copies of UIMessage parts with their secrets masked, as the event log masks the chunks.

    Tool parts: `input`, `output`, `errorText` and the `approval` (its `reason`) by key and shape,
    and `rawInput` (JSON text) as the stream masks `tool-input-delta`; `data-*` payloads likewise.
    Text and reasoning are the conversation itself: only credentials by shape are masked in them
    (`sk-…`, `AKIA…`, `Bearer …`), never by key. Provider metadata (signatures) is kept as sent.
    """
    redactor = redactor or Redactor()
    result: list[dict[str, Any]] = []
    for part in parts:
        copied: dict[str, Any] = json_copy(dict(part))
        kind = str(part.get("type", ""))
        if kind.startswith("tool-") or kind == "dynamic-tool":
            fields: tuple[str, ...] = _TOOL_FIELDS
            raw = copied.get("rawInput")
            if isinstance(raw, str):
                masker = JsonMasker(redactor)
                copied["rawInput"] = masker.feed(raw) + masker.flush()
            elif raw is not None:
                copied["rawInput"] = redactor.redact(raw)
        elif kind.startswith("data-"):
            fields = ("data",)
        elif kind in _TEXT_PARTS and isinstance(copied.get("text"), str):
            copied["text"] = redactor.redact_text(copied["text"])
            fields = ()
        else:
            fields = ()
        for name in fields:
            if name in copied:
                copied[name] = redactor.redact(copied[name])
        result.append(copied)
    return result


def strip_reasoning(parts: Sequence[Mapping[str, Any]], policy: ReasoningPolicy) -> list[dict[str, Any]]:
    """Copies of `parts` under a reasoning retention policy.

    `keep` keeps everything; `drop_text` sets each `reasoning` part's `text` to `""` and keeps the
    part itself, its place in the list, its `state` and its `providerMetadata` (signatures).
    """
    if policy not in ("keep", "drop_text"):
        raise ValueError(f"unknown reasoning policy {policy!r}; expected 'keep' or 'drop_text'")
    result: list[dict[str, Any]] = [json_copy(dict(part)) for part in parts]
    if policy == "drop_text":
        for part in result:
            if part.get("type") == "reasoning":
                part["text"] = ""
    return result
