"""The key `stepline dev` signs approval links with (`stepline.runtime.approval_links`).

Over a data folder the key lives in the folder (`approval-link.key`, readable by its owner only),
made on the first start and read on every later one: the runs and their waiting approvals outlive a
restart, and so does every link printed for them. With no folder (`--memory`) nothing outlives the
process, and the key is a fresh random one.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from ..errors import StepLineError
from ..runtime.approval_links import MIN_KEY_BYTES

__all__ = ["KEY_FILE", "LinkKeyError", "link_key"]

KEY_FILE = "approval-link.key"


class LinkKeyError(StepLineError):
    """The data folder's key file is not a key (the message names the file)."""


def link_key(data_dir: Path | None) -> bytes:
    """The approval-link key: the data folder's (made once), or a fresh one without a folder.

    A new key is written whole to a file of its own, then linked into place: a start killed midway
    leaves no half a key, and of two starts racing the second reads the first one's key.
    """
    if data_dir is None:
        return secrets.token_bytes(MIN_KEY_BYTES)
    path = data_dir / KEY_FILE
    if not path.exists():
        draft = data_dir / f"{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as out:
                out.write(secrets.token_bytes(MIN_KEY_BYTES))
                out.flush()
                os.fsync(out.fileno())
            os.link(draft, path)
        except FileExistsError:
            pass  # another start made it first: its key is the folder's
        finally:
            draft.unlink(missing_ok=True)
    key = path.read_bytes()
    if len(key) < MIN_KEY_BYTES:
        raise LinkKeyError(f"{path}: not an approval-link key (delete it to make a new one)")
    return key
