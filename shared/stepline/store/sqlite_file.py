"""A SQLite file beside the store's (counters, working-run slots): its schema, and a connection per operation."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path


class SqliteFile:
    """A connection per operation (WAL, as the store's), this process's writers one at a time."""

    def __init__(self, path: str | Path, schema: str) -> None:
        self.path = str(path)
        self._lock = threading.Lock()  # spares SQLite's busy-wait between this process's threads
        with self._lock, closing(self._connect()) as connection:
            connection.executescript(schema)

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        return connection
