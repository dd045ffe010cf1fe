"""Stepline's rules for a chat request from a client, on top of the SDK's `validateUIMessages`.

The SDK types ids as any string, `metadata` as `unknown` and a file part's `url` as any string.
What a server stores needs more, and these rules are checked before anything is stored:

- ids that become store keys or are looked up (the chat id, message ids, `messageId`, approval
  ids) have the store's key shape, `ID_PATTERN`: 1-200 characters, no `#`, no whitespace (an empty
  or megabyte-long id used to pass validation and fail in the store);
- a tool call id is 1-200 characters (it comes from a provider, whose alphabet is its own);
- a message's `metadata` is an object when present (Stepline's metadata is an object);
- a file URL (`file`, `reasoning-file`, and a steering message's files) is `http:`, `https:` or
  `data:`, as `new URL(url)` reads it; a `javascript:` link would otherwise be stored and later
  rendered by a client as a link.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

from ._url_href import url_href
from .parts import DynamicToolPart, FilePart, ReasoningFilePart, SteeringMessagePart, ToolPart, UIMessage

__all__ = ["ID_PATTERN", "SAFE_URL_SCHEMES", "id_problem", "request_issues"]

ID_PATTERN: Final = re.compile(r"^[A-Za-z0-9._:@+=-]{1,200}$")
"""The shape of an id that becomes key material (`stepline.store.records.check_id`)."""
ID_RULE: Final = "must be 1-200 characters from A-Z a-z 0-9 . _ : @ + = -"
MAX_TOOL_CALL_ID: Final = 200
SAFE_URL_SCHEMES: Final = frozenset({"http", "https", "data"})

Issue = tuple[str, str]


def id_problem(value: str) -> str | None:
    """Why `value` is not a key-shaped id, or None."""
    return None if ID_PATTERN.match(value) else ID_RULE


def request_issues(messages: list[UIMessage], root: str = "messages") -> list[Issue]:
    """Every breach of the rules above in validated messages, with its path."""
    issues: list[Issue] = []
    for index, message in enumerate(messages):
        path = f"{root}[{index}]"
        if (problem := id_problem(message.id)) is not None:
            issues.append((f"{path}.id", problem))
        if message.metadata is not None and not isinstance(message.metadata, dict):
            issues.append((f"{path}.metadata", "must be an object"))
        for part_index, part in enumerate(message.parts):
            issues.extend(_part_issues(part, f"{path}.parts[{part_index}]"))
    return issues


def _part_issues(part: Any, path: str) -> Iterator[Issue]:
    if isinstance(part, FilePart | ReasoningFilePart):
        if (problem := _url_problem(part.url)) is not None:
            yield f"{path}.url", problem
    elif isinstance(part, SteeringMessagePart):
        for index, inner in enumerate(part.parts):
            yield from _part_issues(inner, f"{path}.parts[{index}]")
    elif isinstance(part, ToolPart | DynamicToolPart):
        if not 0 < len(part.tool_call_id) <= MAX_TOOL_CALL_ID:
            yield f"{path}.toolCallId", f"must be 1-{MAX_TOOL_CALL_ID} characters"
        if part.approval is not None and (problem := id_problem(part.approval.id)) is not None:
            yield f"{path}.approval.id", problem


def _url_problem(url: str) -> str | None:
    try:
        scheme = url_href(url).split(":", 1)[0]
    except ValueError:
        return "must be an absolute URL"
    return None if scheme in SAFE_URL_SCHEMES else "must be an http:, https: or data: URL"
