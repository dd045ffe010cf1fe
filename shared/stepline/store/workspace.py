"""A conversation's file workspace, and moving large inline files out of messages.

Workspace files live under `users/{user}/conversations/{conversation}/workspace/{path}`. Paths
are relative, `/`-separated and normalised (`./` and repeated slashes dropped); `..`, absolute
paths, backslashes and control characters (NUL included) are refused rather than resolved, so a
path can never leave its workspace.

`extract_inline_files` runs before a user message is stored: a `file` part whose `url` is a
`data:` URL larger than the threshold is written to the workspace at
`uploads/{sha256}/{filename}` and its `url` replaced by a stable link, so the message item stays
small and the same upload always lands on the same key.
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, cast
from urllib.parse import unquote_to_bytes

from .blobs import BlobRef, BlobStore, check_key, sha256_hex
from .records import check_id

__all__ = [
    "INLINE_FILE_THRESHOLD",
    "DataUrl",
    "extract_inline_files",
    "list_files",
    "normalise_path",
    "parse_data_url",
    "read_file",
    "workspace_key",
    "workspace_prefix",
    "write_file",
]

INLINE_FILE_THRESHOLD: Final = 16 * 1024
"""Decoded data URLs larger than this many bytes move to the workspace."""

_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f\\]")
_DRIVE = re.compile(r"^[A-Za-z]:")


def workspace_prefix(user_id: str, conversation_id: str) -> str:
    """The folder `users/{user}/conversations/{conversation}/workspace/`."""
    check_id(user_id, "user id")
    check_id(conversation_id, "conversation id")
    return f"users/{user_id}/conversations/{conversation_id}/workspace/"


def normalise_path(path: str) -> str:
    """`path` as a clean relative path (`a//./b` → `a/b`); `ValueError` if it could escape or is empty."""
    if _FORBIDDEN.search(path):
        raise ValueError("invalid workspace path: control characters (NUL included) and backslashes are not allowed")
    if path.startswith("/") or _DRIVE.match(path):
        raise ValueError("invalid workspace path: it must be relative")
    segments = [segment for segment in path.split("/") if segment not in ("", ".")]
    if ".." in segments:
        raise ValueError("invalid workspace path: '..' is not allowed")
    if not segments:
        raise ValueError("invalid workspace path: it names no file")
    return "/".join(segments)


def workspace_key(user_id: str, conversation_id: str, path: str) -> str:
    """The object key of the workspace file `path`."""
    return check_key(workspace_prefix(user_id, conversation_id) + normalise_path(path))


def write_file(
    blobs: BlobStore, user_id: str, conversation_id: str, path: str, data: bytes, media_type: str | None = None
) -> BlobRef:
    """Write (or overwrite) a workspace file."""
    return blobs.put_object(workspace_key(user_id, conversation_id, path), data, media_type)


def read_file(blobs: BlobStore, user_id: str, conversation_id: str, path: str) -> bytes:
    """Read a workspace file (`NotFound` if there is none)."""
    return blobs.get_object(workspace_key(user_id, conversation_id, path))


def list_files(blobs: BlobStore, user_id: str, conversation_id: str, folder: str = "") -> list[str]:
    """The workspace's file paths (relative to the workspace), optionally only under `folder`, sorted."""
    root = workspace_prefix(user_id, conversation_id)
    prefix = root if folder in ("", ".") else root + normalise_path(folder) + "/"
    return [key[len(root) :] for key in blobs.list_keys(prefix)]


@dataclass(frozen=True, slots=True)
class DataUrl:
    """A decoded `data:` URL."""

    media_type: str
    data: bytes


def _forgiving_base64(text: str) -> bytes:
    # WHATWG "forgiving-base64 decode", as fetch() applies it to data: URLs: ASCII whitespace is
    # ignored and the `=` padding is optional, but a length of 1 modulo 4 is an error.
    text = re.sub(r"[\t\n\f\r ]", "", text)
    if len(text) % 4 == 0:
        text = text[:-2] + text[-2:].rstrip("=")
    if len(text) % 4 == 1:
        raise ValueError("invalid base64 data (bad length)")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error as error:
        raise ValueError(f"invalid base64 data ({error})") from None


def parse_data_url(url: str) -> DataUrl:
    """Decode `data:[<media type>][;base64],<data>` (RFC 2397); `ValueError` if it is not one."""
    if url[:5].lower() != "data:":
        raise ValueError("not a data: URL")
    header, comma, body = url[5:].partition(",")
    if not comma:
        raise ValueError("a data: URL needs a ',' before its data")
    params = [param.strip() for param in header.split(";")]
    is_base64 = len(params) > 1 and params[-1].lower() == "base64"
    media_type = ";".join(params[:-1] if is_base64 else params) or "text/plain;charset=US-ASCII"
    if not is_base64:
        return DataUrl(media_type, unquote_to_bytes(body))
    return DataUrl(media_type, _forgiving_base64(unquote_to_bytes(body).decode("ascii", "replace")))


def _upload_name(filename: object) -> str:
    # Keep only the last path segment of a client-supplied name; it becomes one key segment.
    name = filename.replace("\\", "/").rsplit("/", 1)[-1] if isinstance(filename, str) else ""
    name = _FORBIDDEN.sub("", name).strip()
    return name if name not in ("", ".", "..") else "file"


def extract_inline_files(
    user_id: str,
    conversation_id: str,
    message: Mapping[str, Any],
    blobs: BlobStore,
    *,
    threshold: int = INLINE_FILE_THRESHOLD,
    link: Callable[[str], str],
) -> dict[str, Any]:
    """A copy of the UIMessage `message` whose large inline files live in the workspace.

    Every `file` part (also those inside a `steering-message` part) whose `url` is a `data:` URL is
    decoded; if it holds more than `threshold` bytes it is written to
    `workspace/uploads/{sha256}/{filename or "file"}` and its `url` becomes `link(key)`.
    `mediaType`, `filename` and every other field are kept; small files stay inline; `message`
    itself is not changed.

    Raises:
        ValueError: a `data:` URL cannot be decoded (the message names the part, e.g. `parts[2]`).
    """
    result = copy.deepcopy(dict(message))
    parts = result.get("parts")
    if not isinstance(parts, list):
        return result
    for index, part in enumerate(cast(list[Any], parts)):
        if not isinstance(part, dict):
            continue
        part = cast(dict[str, Any], part)
        where = f"parts[{index}]"
        if part.get("type") == "file":
            _extract(part, where, user_id, conversation_id, blobs, threshold, link)
        elif part.get("type") == "steering-message" and isinstance(part.get("parts"), list):
            for inner_index, inner in enumerate(cast(list[Any], part["parts"])):
                if isinstance(inner, dict) and cast(dict[str, Any], inner).get("type") == "file":
                    inner_where = f"{where}.parts[{inner_index}]"
                    _extract(cast(dict[str, Any], inner), inner_where, user_id, conversation_id, blobs, threshold, link)
    return result


def _extract(
    part: dict[str, Any],
    where: str,
    user_id: str,
    conversation_id: str,
    blobs: BlobStore,
    threshold: int,
    link: Callable[[str], str],
) -> None:
    url = part.get("url")
    if not isinstance(url, str) or url[:5].lower() != "data:":
        return
    try:
        decoded = parse_data_url(url)
    except ValueError as error:
        raise ValueError(f"{where}: invalid data URL: {error}") from None
    if len(decoded.data) <= threshold:
        return
    media_type = part.get("mediaType")
    path = f"uploads/{sha256_hex(decoded.data)}/{_upload_name(part.get('filename'))}"
    key = workspace_key(user_id, conversation_id, path)
    blobs.put_object(key, decoded.data, media_type if isinstance(media_type, str) else decoded.media_type)
    part["url"] = link(key)
