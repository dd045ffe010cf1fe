"""Where the files a provider tool generates are kept, so the event log carries a reference.

A provider-executed tool (OpenAI's image generation) returns its file inside the result, as
base64. Streamed as it is, that would put megabytes into the run's event log, the stored message
and the checkpoint. The step handler installs a `GeneratedFiles` that stores the file as an
artifact (in S3) and gives back the output to stream and keep instead; in process there is none
and results pass through unchanged.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import JsonValue

from .tools import Tool

__all__ = ["DROP", "GeneratedFiles"]

DROP = object()
"""Returned by `keep` for a result that is not streamed at all (a preview nobody stores)."""


class GeneratedFiles(Protocol):
    """Replaces generated files in provider tool results by references to where they are stored."""

    async def keep(
        self, tool: Tool | None, tool_call_id: str, output: JsonValue, *, preliminary: bool
    ) -> JsonValue | object:
        """The output to stream and keep (`output` itself when it carries no file), or `DROP`."""
        ...
