"""Generated images of provider tools, stored as artifacts of the run's message (the step handler's).

OpenAI's `image_generation` returns the image as base64 in its result (`{"result": "<base64>"}`,
as the AI SDK streams it). On the durable path the image is written to the conversation's
workspace (`generated/<tool call id>.<format>`, in S3), registered as an artifact of the assistant
message, and the result streamed, stored and checkpointed is the artifact's reference, the shape
`save_artifact` returns:

    {"artifactId": "art_…", "title": "ig_1.png", "url": "/api/artifacts/art_…", "mediaType": "image/png"}

Previews (`partial_images`, preliminary results) are not streamed on the durable path: each would
be another base64 image in the event log. A result that is not a base64 image (an error, a
format Stepline does not know) passes through unchanged. The same call stored twice (a redone step
that replays the same item) is one artifact: the id is derived from the path.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from dataclasses import dataclass

from pydantic import JsonValue

from ..loop.generated_files import DROP
from ..loop.tools import Tool
from ..store.artifacts import make_artifact
from ..store.workspace import write_file
from ..tools.context import RunContext

__all__ = ["ArtifactFiles"]

_FOLDER = "generated"
_MEDIA_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}


@dataclass(frozen=True, slots=True)
class ArtifactFiles:
    """`GeneratedFiles` writing to the run's workspace and artifact records."""

    run: RunContext

    async def keep(
        self, tool: Tool | None, tool_call_id: str, output: JsonValue, *, preliminary: bool
    ) -> JsonValue | object:
        provider = tool.provider if tool is not None else None
        if provider is None or provider.id != "openai.image_generation":
            return output
        if preliminary:
            return DROP
        image = _base64_image(output)
        if image is None or self.run.blobs is None:
            return output
        extension = str(provider.args.get("outputFormat") or "png")
        media_type = _MEDIA_TYPES.get(extension, "application/octet-stream")
        path = f"{_FOLDER}/{tool_call_id}.{extension}"
        return await asyncio.to_thread(self._store, path, image, media_type, tool_call_id)

    def _store(self, path: str, data: bytes, media_type: str, tool_call_id: str) -> JsonValue:
        run = self.run
        assert run.blobs is not None
        write_file(run.blobs, run.user_id, run.conversation_id, path, data, media_type)  # blob first
        title = path.rsplit("/", 1)[-1]
        record = make_artifact(
            user_id=run.user_id,
            conversation_id=run.conversation_id,
            message_id=run.message_id,
            run_id=run.run_id,
            type="file",
            path=path,
            tool_call_id=tool_call_id,
            media_type=media_type,
            size=len(data),
            metadata={"title": title},
        )
        stored = run.store.put_artifact(record)
        return {
            "artifactId": stored.artifact_id,
            "title": title,
            "url": f"/api/artifacts/{stored.artifact_id}",
            "mediaType": media_type,
        }


def _base64_image(output: JsonValue) -> bytes | None:
    result = output.get("result") if isinstance(output, dict) else None
    if not isinstance(result, str) or not result:
        return None
    try:
        return base64.b64decode(result, validate=True)
    except (binascii.Error, ValueError):
        return None
