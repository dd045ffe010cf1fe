"""ArtifactFiles: which provider results become artifacts, and which pass through untouched."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from stepline.llm.openai import tools as openai_tools
from stepline.loop.generated_files import DROP
from stepline.loop.tools import Tool
from stepline.runtime.generated_files import ArtifactFiles
from stepline.store.blobs import MemoryBlobStore
from stepline.store.memory import MemoryStore
from stepline.tools.context import RunContext
from tests.support import openai_tool_events as ev


def files(*, blobs: bool = True) -> tuple[ArtifactFiles, MemoryStore, MemoryBlobStore | None]:
    store, blob_store = MemoryStore(), MemoryBlobStore() if blobs else None
    run = RunContext(
        user_id="alice", conversation_id="conv", run_id="run", message_id="msg", store=store, blobs=blob_store
    )
    return ArtifactFiles(run), store, blob_store


def keep(files: ArtifactFiles, tool: Tool | None, output: Any, *, preliminary: bool = False) -> Any:
    return asyncio.run(files.keep(tool, "ig_1", output, preliminary=preliminary))


def test_an_image_becomes_an_artifact_in_its_format() -> None:
    kept, store, blobs = files()
    reference = keep(kept, openai_tools.image_generation(output_format="webp"), {"result": ev.IMAGE_B64})
    assert reference["mediaType"] == "image/webp" and reference["title"] == "ig_1.webp"
    artifact = store.get_artifact("alice", reference["artifactId"])
    assert artifact.storage_key is not None and artifact.size == len(base64.b64decode(ev.IMAGE_B64))
    assert blobs is not None and blobs.get_object(artifact.storage_key) == base64.b64decode(ev.IMAGE_B64)
    # The same call kept again (a redone step) is the same artifact.
    assert keep(kept, openai_tools.image_generation(output_format="webp"), {"result": ev.IMAGE_B64}) == reference


def test_previews_are_dropped() -> None:
    kept, _, _ = files()
    assert keep(kept, openai_tools.image_generation(), {"result": ev.PARTIAL_B64}, preliminary=True) is DROP


def test_everything_else_passes_through() -> None:
    kept, store, _ = files()
    search = {"action": {"type": "search", "query": "q"}}
    assert keep(kept, openai_tools.web_search(), search) == search
    assert keep(kept, None, {"result": ev.IMAGE_B64}) == {"result": ev.IMAGE_B64}  # not a tool of this agent
    assert keep(kept, openai_tools.image_generation(), {"result": "not base64!"}) == {"result": "not base64!"}
    assert keep(kept, openai_tools.image_generation(), {"status": "failed"}) == {"status": "failed"}
    assert store.list_message_artifacts("alice", "msg") == []
    no_blobs, _, _ = files(blobs=False)
    assert keep(no_blobs, openai_tools.image_generation(), {"result": ev.IMAGE_B64}) == {"result": ev.IMAGE_B64}
