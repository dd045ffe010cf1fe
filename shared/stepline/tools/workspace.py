"""The default toolset: the conversation's file workspace, its artifacts, and questions for the user.

- `list_files(folder="")`: the files in the conversation's workspace.
- `read_file(path)`: a UTF-8 text file, at most `MAX_READ_BYTES` of it (longer files are cut and say so).
- `write_file(path, content)`: needs the user's approval; writes (or overwrites) a text file.
- `save_artifact(path, title?)`: offers a workspace file to the user as an artifact of the current
  assistant message (the same file is one artifact, however often it is saved).
- `ask_user_question(question, options?)`: a client-side tool: the run waits for the user's answer
  (the client sends it with `addToolOutput`).

Paths are relative to the workspace and can never leave it (`stepline.store.workspace`). The tools
run against the `RunContext` the worker passes as the loop's `runtime_context`; without one (for
example in `stepline run`, in process) they return an error the model reads, never crash the run.
Store and S3 calls are blocking, so they run in a worker thread.
"""

from __future__ import annotations

import asyncio
import codecs
import mimetypes
from typing import Any, Final

from pydantic import BaseModel, Field

from ..errors import StepLineError
from ..loop.tools import Tool, ToolContext, tool
from ..store import workspace
from ..store.artifacts import make_artifact
from ..store.blobs import BlobStore
from ..store.errors import NotFound
from .context import RunContext

__all__ = ["MAX_LISTED_FILES", "MAX_READ_BYTES", "TOOLS", "TOOL_APPROVAL", "WorkspaceToolError"]

MAX_READ_BYTES: Final = 64 * 1024
"""`read_file` returns at most this many bytes of a file."""

MAX_LISTED_FILES: Final = 1000
"""`list_files` names at most this many files."""


class WorkspaceToolError(StepLineError):
    """A workspace tool could not do what was asked; the model reads the message as the tool's error."""


class ListFilesInput(BaseModel):
    """Input of `list_files`."""

    folder: str = Field(default="", description="Only list files under this folder (relative); empty for all files")


class ReadFileInput(BaseModel):
    """Input of `read_file`."""

    path: str = Field(min_length=1, description="Path of the file, relative to the workspace, e.g. notes/todo.md")


class WriteFileInput(BaseModel):
    """Input of `write_file`."""

    path: str = Field(min_length=1, description="Path of the file, relative to the workspace, e.g. notes/todo.md")
    content: str = Field(description="The whole new content of the file (UTF-8 text)")


class SaveArtifactInput(BaseModel):
    """Input of `save_artifact`."""

    path: str = Field(min_length=1, description="Path of an existing workspace file")
    title: str | None = Field(default=None, description="A title to show the user; defaults to the file name")


class AskUserQuestionInput(BaseModel):
    """Input of `ask_user_question`."""

    question: str = Field(min_length=1, description="The question to ask the user")
    options: list[str] | None = Field(default=None, description="Answers the user can pick from, if any")


def _workspace(context: ToolContext) -> tuple[RunContext, BlobStore]:
    run = context.runtime_context
    if not isinstance(run, RunContext) or run.blobs is None:
        raise WorkspaceToolError(
            f"{context.tool_name} needs the conversation's workspace, and this run has none "
            "(the workspace tools work in the Stepline server, not in a run without file storage)"
        )
    return run, run.blobs


def _path(path: str) -> str:
    try:
        return workspace.normalise_path(path)
    except ValueError as error:
        raise WorkspaceToolError(f"{error} (got {path!r}; paths are relative to the workspace)") from None


def _media_type(path: str) -> str | None:
    return mimetypes.guess_type(path, strict=False)[0]


async def list_files(request: ListFilesInput, context: ToolContext) -> dict[str, Any]:
    """The workspace's files, optionally only under one folder."""
    run, blobs = _workspace(context)
    folder = "" if request.folder.strip() in ("", ".", "./", "/") else _path(request.folder)
    files = await asyncio.to_thread(workspace.list_files, blobs, run.user_id, run.conversation_id, folder)
    result: dict[str, Any] = {"folder": folder, "files": files[:MAX_LISTED_FILES]}
    if len(files) > MAX_LISTED_FILES:
        result["truncated"] = True
        result["note"] = f"showing the first {MAX_LISTED_FILES} of {len(files)} files; list a folder to see the rest"
    return result


async def read_file(request: ReadFileInput, context: ToolContext) -> dict[str, Any]:
    """A text file's content (the first `MAX_READ_BYTES` bytes of a longer one)."""
    run, blobs = _workspace(context)
    path = _path(request.path)
    try:
        data = await asyncio.to_thread(workspace.read_file, blobs, run.user_id, run.conversation_id, path)
    except NotFound:
        raise WorkspaceToolError(f"no file {path} in this conversation's workspace") from None
    truncated = len(data) > MAX_READ_BYTES
    try:
        # An incremental decode tolerates a character cut in half at the limit, and nothing else.
        content = codecs.getincrementaldecoder("utf-8")().decode(data[:MAX_READ_BYTES], final=not truncated)
    except UnicodeDecodeError:
        content = None
    if content is None or "\x00" in content:
        raise WorkspaceToolError(f"{path} is a binary file ({len(data)} bytes), not UTF-8 text; it cannot be read")
    result: dict[str, Any] = {"path": path, "content": content}
    if truncated:
        result["truncated"] = True
        result["note"] = f"showing the first {MAX_READ_BYTES} of {len(data)} bytes"
    return result


async def write_file(request: WriteFileInput, context: ToolContext) -> dict[str, Any]:
    """Write (or overwrite) a UTF-8 text file."""
    run, blobs = _workspace(context)
    path = _path(request.path)
    data = request.content.encode("utf-8")
    media_type = _media_type(path) or "text/plain"
    if media_type.startswith("text/"):
        media_type += "; charset=utf-8"
    await asyncio.to_thread(workspace.write_file, blobs, run.user_id, run.conversation_id, path, data, media_type)
    return {"path": path, "bytes": len(data)}


async def save_artifact(request: SaveArtifactInput, context: ToolContext) -> dict[str, Any]:
    """Register a workspace file as an artifact of the current assistant message (once per file)."""
    run, blobs = _workspace(context)
    path = _path(request.path)
    try:
        data = await asyncio.to_thread(workspace.read_file, blobs, run.user_id, run.conversation_id, path)
    except NotFound:
        raise WorkspaceToolError(
            f"no file {path} in this conversation's workspace: write it first, then save it as an artifact"
        ) from None
    title = (request.title or "").strip() or path.rsplit("/", 1)[-1]
    record = make_artifact(
        user_id=run.user_id,
        conversation_id=run.conversation_id,
        message_id=run.message_id,
        run_id=run.run_id,
        type="file",
        path=path,
        tool_call_id=context.tool_call_id,
        media_type=_media_type(path) or "application/octet-stream",
        size=len(data),
        metadata={"title": title},
    )
    stored = await asyncio.to_thread(run.store.put_artifact, record)  # the same file again: the stored one
    stored_title = (stored.metadata or {}).get("title")
    return {
        "artifactId": stored.artifact_id,
        "title": stored_title if isinstance(stored_title, str) else title,
        "url": f"/api/artifacts/{stored.artifact_id}",
        "mediaType": stored.media_type,
    }


TOOLS: list[Tool] = [
    tool("list_files", "List the files in this conversation's workspace.", ListFilesInput, list_files),
    tool(
        "read_file",
        f"Read a UTF-8 text file from the workspace (at most {MAX_READ_BYTES // 1024} KB of it).",
        ReadFileInput,
        read_file,
    ),
    tool(
        "write_file",
        "Write a UTF-8 text file in the workspace, replacing any file at that path. Needs the user's approval.",
        WriteFileInput,
        write_file,
    ),
    tool(
        "save_artifact",
        "Offer a workspace file to the user as a downloadable artifact of this answer.",
        SaveArtifactInput,
        save_artifact,
    ),
    tool(
        "ask_user_question",
        "Ask the user a question and wait for the answer; give options when the answer is one of a few choices.",
        AskUserQuestionInput,
    ),
]
TOOL_APPROVAL = {"write_file": "user-approval"}
"""The approval policy this toolset asks for."""
