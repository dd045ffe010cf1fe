"""`SqliteSlots`: the working-run slots in the data folder's SQLite file (`stepline dev`).

One row per lease (owner, run, expiry). A run the live leases already refuse is refused on a
read, so a flood's refusals never queue for the write lock the runs' own writes use. Otherwise
`take_one` drops the owner's expired leases, counts the live ones and writes its own in one
`BEGIN IMMEDIATE` transaction: SQLite's single writer makes the check and the write atomic across
threads and processes, as the condition of one `UpdateItem` does on DynamoDB.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

from .run_slots import SlotCap, SlotKey, refuses
from .sqlite_file import SqliteFile

__all__ = ["SqliteSlots"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS run_slots (
    owner TEXT NOT NULL,
    run_id TEXT NOT NULL,
    expires INTEGER NOT NULL,
    PRIMARY KEY (owner, run_id)
);
"""


def _owner(key: SlotKey) -> str:
    return f"{key.scope}\x1f{key.owner}"


class SqliteSlots(SqliteFile):
    """Working-run leases in a SQLite file (a connection per operation; WAL, as the store's)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, _SCHEMA)

    def take_one(self, cap: SlotCap, run_id: str, *, now_ms: int, lease_ms: int) -> bool:
        owner = _owner(cap.key)
        if cap.cap is not None and refuses(cap, self.holders(cap.key, now_ms=now_ms), run_id, now_ms):
            return False  # at the cap already: refused on a read, without waiting for the write lock
        with self._lock, closing(self._connect()) as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute("DELETE FROM run_slots WHERE owner = ? AND expires <= ?", (owner, now_ms))
                rows = connection.execute("SELECT run_id, expires FROM run_slots WHERE owner = ?", (owner,))
                if refuses(cap, {str(r): int(e) for r, e in rows.fetchall()}, run_id, now_ms):
                    connection.execute("COMMIT")  # the expired leases stay dropped
                    return False
                connection.execute(
                    "INSERT INTO run_slots (owner, run_id, expires) VALUES (?, ?, ?) "
                    "ON CONFLICT (owner, run_id) DO UPDATE SET expires = excluded.expires",
                    (owner, run_id, now_ms + lease_ms),
                )
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            return True

    def release(self, keys: Sequence[SlotKey], run_id: str) -> None:
        if not keys:
            return
        with self._lock, closing(self._connect()) as connection:
            connection.executemany(
                "DELETE FROM run_slots WHERE owner = ? AND run_id = ?", [(_owner(k), run_id) for k in keys]
            )

    def holders(self, key: SlotKey, *, now_ms: int) -> dict[str, int]:
        with closing(self._connect()) as connection:
            rows = connection.execute(
                "SELECT run_id, expires FROM run_slots WHERE owner = ? AND expires > ?", (_owner(key), now_ms)
            ).fetchall()
        return {str(r): int(e) for r, e in rows}
