"""The SQLite store's table and one transaction's unit of work over it (`SqliteUnit`).

One row per record, keyed as on DynamoDB (`unit.record_key`: partition, sort key), its body the
record's JSON, with the few index columns the listings and sweeps need. A unit reads inside the
transaction its store opened and stages its writes, applied together by `commit`.

A checkpoint's step records likewise (`checkpoint_pages`), rows `steppage/{user}/{run}`.
A long message's parts are kept in pages (`message_pages`): each page a row `page/{user}/{conversation}`,
its key the page's digest, its body the page's JSON. A write inserts only the pages that are not
among the ones the unit read, and a conversation's deletion deletes its pages with its messages.
"""

from __future__ import annotations

import sqlite3
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from ..protocol._json import dumps, loads_strict
from .checkpoint_pages import checkpoint_json, load_checkpoint, step_page_digests
from .errors import Conflict, StoreError
from .message_pages import PAGES_KEY, PageCache, StoredPage, decode_pages, plan_pages
from .records import (
    ApprovalRecord,
    ArtifactRecord,
    CheckpointRecord,
    ConversationRecord,
    EventRecord,
    MessageRecord,
    RunRecord,
    StepRecordRow,
    ToolCallRecord,
)
from .unit import Record, record_key

__all__ = ["SCHEMA", "SqliteUnit", "load_message", "part_key", "sort_key"]

T = TypeVar("T")
R = TypeVar("R", bound=BaseModel)

SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    part   TEXT NOT NULL,    -- the partition: kind, user and parent ids, joined by '/'
    sk     TEXT NOT NULL,    -- the sort key (numbers zero-padded, so text order is number order)
    kind   TEXT NOT NULL,
    status TEXT,             -- runs and approvals: their status (the sweeps)
    ref    TEXT,             -- messages: message id; approvals: run id; artifacts: message id
    at     INTEGER,          -- conversations: updated_at; runs: heartbeat; approvals, events: expires_at
    body   TEXT NOT NULL,    -- the record as JSON
    PRIMARY KEY (part, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_by_ref ON records (part, ref);
CREATE INDEX IF NOT EXISTS records_by_status ON records (kind, status, at);
"""


def part_key(*names: str) -> str:
    """The `part` column of a partition key's names."""
    return "/".join(names)  # ids never hold '/' (`records.check_id`)


def sort_key(key: str | int) -> str:
    """The `sk` column of a sort key: numbers zero-padded so that they sort as text."""
    return f"{key:020d}" if isinstance(key, int) else key


def _row(record: Record) -> tuple[str, str, str, str | None, str | None, int | None, str]:
    partition, key = record_key(record)
    status: str | None = None
    ref: str | None = None
    at: int | None = None
    match record:
        case ConversationRecord():
            at = record.updated_at
        case MessageRecord():
            ref = record.message_id
        case RunRecord():
            status, at = record.status, record.heartbeat_at or 0
        case ApprovalRecord():
            status, ref, at = record.status, record.run_id, record.expires_at
        case ArtifactRecord():
            ref = record.message_id
        case EventRecord():
            at = record.expires_at
        case _:
            pass
    return part_key(*partition), sort_key(key), partition[0], status, ref, at, record.model_dump_json()


def load_message(db: sqlite3.Connection, body: str, cache: PageCache) -> tuple[MessageRecord, list[StoredPage]]:
    """A message from its row's body, its parts read from its pages (and the pages read)."""
    data = loads_strict(body)
    if not isinstance(data, dict) or PAGES_KEY not in data:
        return MessageRecord.model_validate_json(body), []
    fields = dict(cast(dict[str, Any], data))
    user_id, conversation_id = str(fields["user_id"]), str(fields["conversation_id"])
    partition = part_key("page", user_id, conversation_id)

    def load(digest: str, _size: int) -> bytes:
        row = db.execute("SELECT body FROM records WHERE part = ? AND sk = ?", (partition, digest)).fetchone()
        if row is None:
            raise StoreError(f"page {digest} of a message in conversation {conversation_id} is missing")
        return str(row[0]).encode("utf-8")

    fields["parts"], pages = decode_pages(user_id, fields.pop(PAGES_KEY), cache, load)
    return MessageRecord.model_validate(fields), pages


def _message_row(
    db: sqlite3.Connection, record: MessageRecord, read: list[StoredPage], cache: PageCache
) -> tuple[str, str, str, str | None, str | None, int | None, str]:
    """The message's row, its new pages inserted first (an existing page is left as it is)."""
    row = _row_keys(record)
    plan = plan_pages(record.parts, read)
    if plan is None:
        return (*row, record.model_dump_json())
    partition = part_key("page", record.user_id, record.conversation_id)
    for page, data in plan.new:
        db.execute(
            "INSERT OR IGNORE INTO records VALUES (?, ?, 'page', NULL, NULL, NULL, ?)",
            (partition, page.digest, data.decode("utf-8")),
        )
        cache.add(record.user_id, page)
    fields = record.model_dump(mode="json", exclude={"parts"})
    return (*row, dumps({**fields, "parts": [], PAGES_KEY: [page.ref() for page in plan.pages]}))


def _row_keys(record: MessageRecord) -> tuple[str, str, str, str | None, str | None, int | None]:
    partition, key = record_key(record)
    return part_key(*partition), sort_key(key), partition[0], None, record.message_id, None


class SqliteUnit:
    """Reads the committed rows through the transaction's connection; stages writes."""

    def __init__(self, connection: sqlite3.Connection, pages: PageCache | None = None) -> None:
        self._db = connection
        self._cache = pages or PageCache()
        self._read_pages: dict[tuple[str, str, int], list[StoredPage]] = {}
        self.writes: list[tuple[Record, bool]] = []
        self.deletes: list[Record] = []

    def _get(self, cls: type[R], part: str, sk: str | int) -> R | None:
        row = self._db.execute("SELECT body FROM records WHERE part = ? AND sk = ?", (part, sort_key(sk))).fetchone()
        return None if row is None else cls.model_validate_json(row[0])

    def _all(self, cls: type[R], part: str) -> list[R]:
        rows = self._db.execute("SELECT body FROM records WHERE part = ? ORDER BY sk", (part,)).fetchall()
        return [cls.model_validate_json(r[0]) for r in rows]

    def conversation(self, user_id: str, conversation_id: str) -> ConversationRecord | None:
        return self._get(ConversationRecord, part_key("conv", user_id), conversation_id)

    def message(self, user_id: str, conversation_id: str, seq: int) -> MessageRecord | None:
        row = self._db.execute(
            "SELECT body FROM records WHERE part = ? AND sk = ?",
            (part_key("msg", user_id, conversation_id), sort_key(seq)),
        ).fetchone()
        if row is None:
            return None
        message, pages = load_message(self._db, row[0], self._cache)
        self._read_pages[(user_id, conversation_id, seq)] = pages
        return message

    def message_id_taken(self, user_id: str, conversation_id: str, message_id: str) -> bool:
        found = self._db.execute(
            "SELECT 1 FROM records WHERE part = ? AND ref = ?", (part_key("msg", user_id, conversation_id), message_id)
        ).fetchone()
        return found is not None

    def run(self, user_id: str, run_id: str) -> RunRecord | None:
        return self._get(RunRecord, part_key("run", user_id), run_id)

    def step(self, user_id: str, run_id: str, step_index: int) -> StepRecordRow | None:
        return self._get(StepRecordRow, part_key("step", user_id, run_id), step_index)

    def tool_call(self, user_id: str, run_id: str, tool_call_id: str) -> ToolCallRecord | None:
        return self._get(ToolCallRecord, part_key("tool", user_id, run_id), tool_call_id)

    def run_tool_calls(self, user_id: str, run_id: str) -> list[ToolCallRecord]:
        return self._all(ToolCallRecord, part_key("tool", user_id, run_id))

    def run_steps(self, user_id: str, run_id: str, from_step: int = 0) -> list[StepRecordRow]:
        rows = self._db.execute(
            "SELECT body FROM records WHERE part = ? AND sk >= ? ORDER BY sk",
            (part_key("step", user_id, run_id), sort_key(from_step)),
        ).fetchall()
        return [StepRecordRow.model_validate_json(r[0]) for r in rows]

    def approval(self, user_id: str, approval_id: str) -> ApprovalRecord | None:
        return self._get(ApprovalRecord, part_key("approval", user_id), approval_id)

    def run_approvals(self, user_id: str, run_id: str) -> list[ApprovalRecord]:
        rows = self._db.execute(
            "SELECT body FROM records WHERE part = ? AND ref = ? ORDER BY sk", (part_key("approval", user_id), run_id)
        ).fetchall()
        return [ApprovalRecord.model_validate_json(r[0]) for r in rows]

    def approval_for_tool_call(self, user_id: str, run_id: str, tool_call_id: str) -> str | None:
        found = [a.approval_id for a in self.run_approvals(user_id, run_id) if a.tool_call_id == tool_call_id]
        return found[0] if found else None

    def artifact(self, user_id: str, artifact_id: str) -> ArtifactRecord | None:
        return self._get(ArtifactRecord, part_key("artifact", user_id), artifact_id)

    def checkpoint(self, user_id: str, run_id: str, seq: int) -> CheckpointRecord | None:
        body = self._body(part_key("ckpt", user_id, run_id), seq)
        if body is None:
            return None
        partition = part_key("steppage", user_id, run_id)
        return load_checkpoint(loads_strict(body), self._cache, lambda digest, _: self._page(partition, digest))

    def _body(self, part: str, sk: str | int) -> str | None:
        row = self._db.execute("SELECT body FROM records WHERE part = ? AND sk = ?", (part, sort_key(sk))).fetchone()
        return None if row is None else str(row[0])

    def _page(self, partition: str, digest: str) -> bytes:
        body = self._body(partition, digest)
        if body is None:
            raise StoreError(f"step page {digest} is missing")
        return body.encode("utf-8")

    def _checkpoint_row(
        self, record: CheckpointRecord
    ) -> tuple[str, str, str, str | None, str | None, int | None, str]:
        """The checkpoint's row, its new step pages inserted first (the previous checkpoint's known stored)."""
        partition = part_key("steppage", record.user_id, record.run_id)
        previous = self._body(part_key("ckpt", record.user_id, record.run_id), record.seq - 1)
        known = step_page_digests(loads_strict(previous)) if previous is not None else frozenset[str]()

        def write(page: StoredPage, data: bytes) -> None:
            self._db.execute(
                "INSERT OR IGNORE INTO records VALUES (?, ?, 'steppage', NULL, NULL, NULL, ?)",
                (partition, page.digest, data.decode("utf-8")),
            )

        body = checkpoint_json(record, write, known, self._cache)
        partition_names, key = record_key(record)
        return part_key(*partition_names), sort_key(key), partition_names[0], None, None, None, body

    def put(self, record: Record, *, new: bool = False) -> None:
        self.writes.append((record, new))

    def delete(self, record: Record) -> None:
        self.deletes.append(record)

    def commit(self) -> None:
        for record, new in self.writes:
            if isinstance(record, MessageRecord):
                read = self._read_pages.get((record.user_id, record.conversation_id, record.seq), [])
                row = _message_row(self._db, record, read, self._cache)
            elif isinstance(record, CheckpointRecord):
                row = self._checkpoint_row(record)
            else:
                row = _row(record)
            verb = "INSERT" if new else "INSERT OR REPLACE"
            try:
                self._db.execute(f"{verb} INTO records VALUES (?, ?, ?, ?, ?, ?, ?)", row)
            except sqlite3.IntegrityError:
                partition, key = record_key(record)
                raise Conflict(f"{partition[0]} {key} already exists") from None
        for record in self.deletes:
            partition, key = record_key(record)
            self._db.execute("DELETE FROM records WHERE part = ? AND sk = ?", (part_key(*partition), sort_key(key)))
