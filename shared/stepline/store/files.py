"""`FileBlobStore`: the blob port on a folder of files, for `stepline dev`'s data folder.

An object key is a relative path under the root (`check_key` refuses `..`, absolute paths and
empty segments, so a key cannot leave the root). A write goes to a temporary file in the same
folder and is renamed into place, so a reader sees the old bytes or the new ones, never half a
file, and a process killed mid-write leaves at most a `.tmp-*` orphan (never listed). The media
type, when one is given, is kept beside the object in `{name}.media-type`.

Links are `file://` URLs; the local runtime serves its own signed links instead
(`stepline.local.links.LocalLinkBlobStore`).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from .blobs import BlobRef, blob_key, check_expiry, check_key, check_prefix, sha256_hex, verify
from .errors import NotFound, StoreError

__all__ = ["FileBlobStore"]

_MEDIA = ".media-type"
_TMP = ".tmp-"


class FileBlobStore:
    """`BlobStore` on the file system, safe to share between threads (and processes: writes are renames)."""

    def __init__(self, root: str | Path, *, clock: Callable[[], float] = time.time) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path:
        check_key(key)
        if any(segment.startswith(_TMP) or segment.endswith(_MEDIA) for segment in key.split("/")):
            raise ValueError("invalid object key: names starting '.tmp-' or ending '.media-type' are reserved")
        return self.root / key

    def _write(self, path: Path, data: bytes) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise StoreError(f"cannot write {path.relative_to(self.root)}: a folder of it is an object") from None
        if path.is_dir():
            raise StoreError(f"cannot write {path.relative_to(self.root)}: it is a folder of other objects")
        handle, temporary = tempfile.mkstemp(prefix=_TMP, dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def _write_object(self, path: Path, data: bytes, media_type: str | None) -> None:
        media = path.with_name(path.name + _MEDIA)
        if media_type is None:
            media.unlink(missing_ok=True)
        else:
            self._write(media, media_type.encode())
        self._write(path, data)

    def put(self, user_id: str, data: bytes, *, media_type: str | None = None, kind: str = "blobs") -> BlobRef:
        digest = sha256_hex(data)
        key = blob_key(user_id, digest, kind=kind)
        path = self._path(key)
        with self._lock:
            # Same key, same bytes: nothing to do; an object that no longer hashes to its key was
            # altered, and writing the true bytes back repairs it.
            if not path.is_file() or sha256_hex(path.read_bytes()) != digest:
                self._write_object(path, data, media_type)
        return BlobRef(key=key, sha256=digest, size=len(data), media_type=media_type)

    def get(self, ref: BlobRef) -> bytes:
        return verify(ref, self.get_object(ref.key))

    def put_object(self, key: str, data: bytes, media_type: str | None = None) -> BlobRef:
        path = self._path(key)
        with self._lock:
            self._write_object(path, data, media_type)
        return BlobRef(key=key, sha256=sha256_hex(data), size=len(data), media_type=media_type)

    def get_object(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise NotFound(f"no object {key}") from None

    def list_keys(self, prefix: str) -> list[str]:
        check_prefix(prefix)
        folder = self.root / prefix
        if not folder.is_dir():
            return []
        keys = [
            path.relative_to(self.root).as_posix()
            for path in folder.rglob("*")
            if path.is_file() and not path.name.startswith(_TMP) and not path.name.endswith(_MEDIA)
        ]
        return sorted(keys)

    def presign_get(self, key: str, *, expires_in: int = 300, filename: str | None = None) -> str:
        path = self._path(key)
        link = f"{path.as_uri()}?expires={int(self._clock()) + check_expiry(expires_in)}"
        if filename is not None:
            link += f"&filename={quote(filename, safe='')}"
        return link

    def delete_prefix(self, prefix: str) -> int:
        keys = self.list_keys(prefix)
        with self._lock:
            for key in keys:
                path = self.root / key
                path.unlink(missing_ok=True)
                path.with_name(path.name + _MEDIA).unlink(missing_ok=True)
        return len(keys)
