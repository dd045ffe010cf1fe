"""`read_output`: the built-in tool that reads an offloaded tool output in pieces, or searches it.

The model is offered it on the steps whose context holds an offloaded output's preview. It reads only
the calling user's outputs (the key is built from the run's user and the handle, a SHA-256 that the
bytes are checked against).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import Field

from ..agent.tools import tool
from ..store.blobs import blob_key, sha256_hex
from ..store.errors import NotFound
from ..tools.context import RunContext
from .offload import OUTPUTS_KIND

__all__ = ["MAX_LENGTH", "read_output"]

MAX_LENGTH = 8_000
"""The most characters one call returns."""
_HANDLE = re.compile(r"[0-9a-f]{64}")
_MATCHES = 20


Handle = Annotated[str, Field(description="The output's handle (64 hex characters), as its preview names it.")]
Offset = Annotated[int, Field(ge=0, description="The first character to read.")]
Length = Annotated[int, Field(ge=1, le=MAX_LENGTH, description="How many characters to read.")]
Search = Annotated[str | None, Field(description="Instead of a range: the text to find (each match's offset).")]


@tool(name="read_output", description="Read a part of a large tool output by its handle, or search it.")
def read_output(
    handle: Handle, context: RunContext, offset: Offset = 0, length: Length = 4_000, search: Search = None
) -> dict[str, Any]:
    """Read `length` characters of the output from `offset`, or find `search` in it."""
    if not _HANDLE.fullmatch(handle):
        return {"error": "unknown handle: expected the 64 hex characters the preview names"}
    if context.blobs is None:
        return {"error": "this deployment keeps no tool outputs"}
    try:
        data = context.blobs.get_object(blob_key(context.user_id, handle, kind=OUTPUTS_KIND))
    except NotFound:
        return {"error": f"no output {handle} for this user"}
    if sha256_hex(data) != handle:
        return {"error": "the stored output does not match its handle"}
    text = data.decode("utf-8")
    if search is not None:
        return _search(text, search)
    piece = text[offset : offset + length]
    return {
        "offset": offset,
        "length": len(piece),
        "total": len(text),
        "more": offset + len(piece) < len(text),
        "text": piece,
    }


def _search(text: str, needle: str) -> dict[str, Any]:
    if not needle:
        return {"error": "search: give the text to find"}
    matches: list[dict[str, Any]] = []
    start = text.find(needle)
    while start >= 0 and len(matches) < _MATCHES:
        around = text[max(start - 80, 0) : start + len(needle) + 80]
        matches.append({"offset": start, "context": around})
        start = text.find(needle, start + 1)
    return {"total": len(text), "matches": matches, "more": start >= 0}
