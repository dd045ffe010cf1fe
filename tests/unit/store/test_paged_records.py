"""A long message's parts and a checkpoint's step records in content-addressed pages.

The class of bug: a step's writes growing with the run (the whole assistant message and the whole
checkpoint, a record of every step before, rewritten at every step end). Counted at the store's
boundary — SQLite's rows as written, DynamoDB's items and the blobs PUT — never timed.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from stepline import Agent
from stepline.aws.dynamo_pages import MESSAGE_INLINE_BYTES
from stepline.context.policy import ContextPolicy
from stepline.loop.stop import is_step_count
from stepline.protocol._json import dumps as json_dumps
from stepline.store import message_pages
from stepline.store import sqlite as sqlite_module
from stepline.store.blobs import BlobIntegrityError, MemoryBlobStore
from stepline.store.checkpoint_pages import checkpoint_json, load_checkpoint
from stepline.store.message_pages import PAGE_BYTES, STEP_PAGES_KEY, PageCache, StoredPage, plan_pages
from stepline.store.records import CheckpointRecord, MessageRecord
from stepline.store.sqlite import SqliteStore
from stepline.testing.harness import Harness
from tests.support.aws_env import use_fake_aws
from tests.support.long_task import LongTask, long_task_model, read_tool

OUTPUT = 20_000
STEPS = 40
POLICY = ContextPolicy(context_window=32_000, output_reserve=2_000, keep_recent=3)


def _parts(count: int, size: int = OUTPUT) -> list[dict[str, Any]]:
    return [{"type": "text", "text": f"{i}:" + "x" * size} for i in range(count)]


def _page(parts: list[dict[str, Any]]) -> list[StoredPage]:
    plan = plan_pages(parts)
    assert plan is not None
    return plan.pages


def test_a_short_message_stays_inline_and_a_long_one_is_paged() -> None:
    assert plan_pages(_parts(2, 100)) is None
    plan = plan_pages(_parts(10))
    assert plan is not None and len(plan.pages) > 1
    assert [p for page in plan.pages for p in page.parts] == _parts(10)
    assert all(page.size >= PAGE_BYTES for page in plan.pages[:-1])


def test_the_full_pages_read_are_kept_and_only_the_tail_is_written_again() -> None:
    read = _page(_parts(10))
    plan = plan_pages([*_parts(10), *_parts(1, 5)], read)
    assert plan is not None
    assert plan.pages[:-1] == read[:-1]  # every full page kept as read
    new = [page for page, _ in plan.new]
    assert len(new) == 1 and new[0].parts[-1] == _parts(1, 5)[0]  # the open page and the new part


def test_a_changed_part_rewrites_its_page_and_the_pages_after_it() -> None:
    parts = _parts(10)
    read = _page(parts)
    changed = [*parts[:5], {"type": "text", "text": "changed"}, *parts[6:]]
    plan = plan_pages(changed, read)
    assert plan is not None
    assert [p for page in plan.pages for p in page.parts] == changed
    assert len(read[0].parts) == 4 and plan.pages[0] == read[0]  # parts 0-3: untouched, kept
    assert [page for page, _ in plan.new] == plan.pages[1:]  # part 5's page and the ones after it


def _agent(total: int, output: int = OUTPUT) -> Agent:
    return Agent(name="long", tools=[read_tool(output)], context=POLICY, stop_when=is_step_count(total + 5))


Counters = dict[str, int]


def _per_step(harness: Harness, counters: Counters, task: LongTask, output: int = OUTPUT) -> dict[str, list[int]]:
    """Bytes written between one model call and the next, per counter (what a step wrote)."""
    marks: list[Counters] = []
    task.before_answer = lambda kind, _count: marks.append(dict(counters)) if kind == "step" else None
    result = harness.turn(f"Read all {task.total} parts.")
    assert result.status == "completed", result.stream_errors
    outputs = [p["output"] for p in result.stored_message["parts"] if p.get("type") == "tool-read"]
    assert len(outputs) == task.total and all(len(o) == output for o in outputs)  # the message keeps them whole
    assert [t.input for t in result.tool_calls] == [{"part": k} for k in range(1, task.total + 1)]
    marks.append(dict(counters))
    return {name: [b[name] - a[name] for a, b in zip(marks, marks[1:], strict=False)] for name in counters}


def _assert_flat(per_step: dict[str, list[int]]) -> None:
    # Rewriting the message each step would write k outputs at step k (up to 800 KB here); in pages
    # a write stores the step's parts and the open page before them (under PAGE_BYTES), and a step
    # writes its message twice at most (its snapshot and its end).
    bound = 2 * (PAGE_BYTES + OUTPUT) + 16_000
    assert 4 * bound < STEPS * OUTPUT
    assert max(per_step["message"]) <= bound, per_step["message"]
    # A checkpoint holds the last step's output whole (three times) and a record of every step before
    # it: rewritten whole, a step's checkpoints grew past 1.5 MB by step 40 here. With the records in
    # pages a checkpoint writes the rest of the state and its new step pages (the open one, the last
    # two steps' records); a step writes two checkpoints at most (its end and a compaction).
    assert max(per_step["checkpoint"]) <= 2 * (PAGE_BYTES + 4 * OUTPUT), per_step["checkpoint"]


def test_the_bytes_a_step_writes_on_sqlite_do_not_grow_with_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counters = {"message": 0, "checkpoint": 0}
    kinds = {"msg/": "message", "page/": "message", "ckpt/": "checkpoint", "steppage/": "checkpoint"}
    execute = sqlite3.Connection.execute

    def counting(self: sqlite3.Connection, sql: str, parameters: Any = ()) -> Any:
        if sql.startswith("INSERT") and len(parameters):
            for prefix, name in kinds.items():
                if str(parameters[0]).startswith(prefix):
                    counters[name] += sum(len(p) for p in parameters if isinstance(p, str))
        return execute(self, sql, parameters)

    monkeypatch.setattr(sqlite_module._Connection, "execute", counting)  # pyright: ignore[reportPrivateUsage]
    store = SqliteStore(tmp_path / "stepline.db")
    task = LongTask(total=STEPS)
    harness = Harness(_agent(STEPS), model=long_task_model(task), store=store)  # pyright: ignore[reportArgumentType]
    _assert_flat(_per_step(harness, counters, task))
    store.close()


class _CountingBlobs(MemoryBlobStore):
    """Counts the bytes and the PUTs under `counting` (the kind of record the store is encoding), if set."""

    def __init__(self) -> None:
        super().__init__()
        self.counting: str | None = None
        self.counters = {"message": 0, "checkpoint": 0, "message item": 0, "message puts": 0}

    def put(self, user_id: str, data: bytes, *, media_type: str | None = None, kind: str = "blobs") -> Any:
        if self.counting is not None:
            self.counters[self.counting] += len(data)
            if self.counting == "message":
                self.counters["message puts"] += 1
        return super().put(user_id, data, media_type=media_type, kind=kind)


def _dynamo_per_step(
    monkeypatch: pytest.MonkeyPatch, *, steps: int = STEPS, output: int = OUTPUT
) -> dict[str, list[int]]:
    """A step's bytes of message and checkpoint on DynamoDB+S3: the items as encoded plus the blobs PUT."""
    from moto import mock_aws

    from tests.support.dynamo_store import make_dynamo_store

    use_fake_aws(monkeypatch)
    with mock_aws():
        blobs = _CountingBlobs()
        store, _ = make_dynamo_store(blobs=blobs)
        encode = store.encode

        def counting(record: Any, *args: Any) -> dict[str, Any]:
            name = "message" if isinstance(record, MessageRecord) else None
            name = "checkpoint" if isinstance(record, CheckpointRecord) else name
            blobs.counting = name
            try:
                item = encode(record, *args)
            finally:
                blobs.counting = None
            if name is not None:  # the item's own attributes, as the transaction writes them
                size = sum(len(str(value)) for value in item.values())
                blobs.counters[name] += size
                blobs.counters["message item"] += size if name == "message" else 0
            return item

        monkeypatch.setattr(store, "encode", counting)
        task = LongTask(total=steps)
        harness = Harness(_agent(steps, output), model=long_task_model(task), store=store, blobs=blobs)  # pyright: ignore[reportArgumentType]
        return _per_step(harness, blobs.counters, task, output)


def test_the_bytes_a_step_writes_on_dynamodb_and_s3_do_not_grow_with_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _assert_flat(_dynamo_per_step(monkeypatch))


def test_a_short_message_on_dynamodb_is_not_rewritten_whole_at_each_step(monkeypatch: pytest.MonkeyPatch) -> None:
    # The shape of a typical run: 2 KB tool outputs, the message far under a page's 64 KB. Inline, a
    # step rewrote the whole message in its step-end transaction (2 write units a KB): k outputs at
    # step k, 80 KB by step 40 here. In pages from MESSAGE_INLINE_BYTES on, the item keeps the page
    # references and a step PUTs the open page (and one it closed): a PUT costs the same at any size.
    output, steps = 2_000, 40
    per_step = _dynamo_per_step(monkeypatch, steps=steps, output=output)
    item_bound = 2 * MESSAGE_INLINE_BYTES  # a step writes its message twice at most
    assert 4 * item_bound < steps * output
    assert max(per_step["message item"]) <= item_bound, per_step["message item"]
    assert max(per_step["message puts"]) <= 4, per_step["message puts"]  # two writes, each its open page and one closed
    assert sum(per_step["message puts"]) <= 2 * steps, per_step["message puts"]


def _long_message(store: SqliteStore) -> MessageRecord:
    task = LongTask(total=8)
    harness = Harness(_agent(8), model=long_task_model(task), store=store)  # pyright: ignore[reportArgumentType]
    result = harness.turn("Read all 8 parts.")
    assert result.status == "completed"
    return store.get_message(harness.user_id, result.run.conversation_id, result.run.assistant_message_id)


def test_a_new_store_reads_the_paged_message_back_whole_and_an_altered_page_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "stepline.db"
    first = SqliteStore(path)
    message = _long_message(first)
    first.close()
    again = SqliteStore(path)  # an empty page cache: every page read from the file
    assert again.get_message(message.user_id, message.conversation_id, message.message_id) == message
    pages = [row for row in again.dump() if row[0].startswith("page/")]
    assert len(pages) >= 2
    again.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE records SET body = replace(body, 'part 3', 'part 9') WHERE part LIKE 'page/%'")
    altered = SqliteStore(path)
    with pytest.raises(BlobIntegrityError):
        altered.get_message(message.user_id, message.conversation_id, message.message_id)
    altered.close()


def test_deleting_the_conversation_deletes_its_pages(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "stepline.db")
    message = _long_message(store)
    store.delete_conversation(message.user_id, message.conversation_id)
    assert not [row for row in store.dump() if row[0].startswith("page/")]
    store.close()


def _checkpoint(steps: int, seq: int) -> CheckpointRecord:
    records = [{"index": i, "preview": f"{i}:" + "x" * OUTPUT} for i in range(steps)]
    return CheckpointRecord(
        user_id="u1", run_id="r1", seq=seq, step_index=steps, state={"steps": records}, created_at=0
    )


def _refs(body: str) -> list[str]:
    return [ref["sha256"] for ref in json.loads(body)["state"][STEP_PAGES_KEY]]


def test_a_checkpoint_keeps_the_previous_ones_full_step_pages_without_serializing_them_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = PageCache()
    written: dict[str, bytes] = {}
    first = checkpoint_json(
        _checkpoint(30, 1), lambda page, data: written.update({page.digest: data}), frozenset(), cache
    )
    serialized: list[object] = []
    real = json_dumps

    def counting(value: Any) -> str:
        serialized.append(value)
        return real(value)

    monkeypatch.setattr(message_pages, "dumps", counting)
    again: dict[str, bytes] = {}
    second = checkpoint_json(
        _checkpoint(31, 2), lambda page, data: again.update({page.digest: data}), frozenset(_refs(first)), cache
    )
    step_records = [v for v in serialized if isinstance(v, dict) and "preview" in v]
    assert len(step_records) <= 4, len(step_records)  # the open page's records and the new one, not all 31
    kept = _refs(first)
    assert kept and _refs(second)[: len(kept)] == kept  # the full pages, neither serialized nor written again
    assert set(again) == set(_refs(second)) - set(kept)  # only a page the new record closed is written
    assert _restored(second, {**written, **again}) == _checkpoint(31, 2).state["steps"]


def _restored(body: str, stored: dict[str, bytes]) -> list[Any]:
    """The step records of a checkpoint's JSON, read back by a process that has seen none of its pages."""
    return load_checkpoint(json.loads(body), PageCache(), lambda digest, _: stored[digest]).state["steps"]


def test_a_step_end_writes_a_step_page_only_when_it_closes_one() -> None:
    # The open last page changes at every step: written as a page of its own, every step end PUT
    # two objects on DynamoDB (the checkpoint, over 8 KB a blob anyway, and that page). Its records
    # ride in the checkpoint's own JSON, so the pages written are exactly the pages closed.
    cache = PageCache()
    written: dict[str, bytes] = {}
    writes = 0
    known: frozenset[str] = frozenset()
    refs: list[str] = []
    for steps in range(1, 61):
        before = len(written)
        body = checkpoint_json(
            _checkpoint(steps, steps), lambda page, data: written.update({page.digest: data}), known, cache
        )
        writes += len(written) - before
        refs = _refs(body) if STEP_PAGES_KEY in json.loads(body)["state"] else []
        assert all(len(written[digest]) >= PAGE_BYTES for digest in refs)  # no open page among them
        assert _restored(body, written) == _checkpoint(steps, steps).state["steps"]
        known = frozenset(refs)
    assert writes == len(refs) >= 2, (writes, len(refs))  # each closed page written once, nothing else


def test_a_remembered_page_not_known_stored_is_written_again() -> None:
    # the first checkpoint's write failed after its pages were planned: nothing of it is stored
    cache = PageCache()
    checkpoint_json(_checkpoint(30, 1), lambda page, data: None, frozenset(), cache)
    written: dict[str, bytes] = {}
    second = checkpoint_json(
        _checkpoint(31, 1), lambda page, data: written.update({page.digest: data}), frozenset(), cache
    )
    assert _refs(second) and set(_refs(second)) <= set(written)
    assert _restored(second, written) == _checkpoint(31, 1).state["steps"]


def test_a_paged_message_item_leaves_out_the_content_its_pages_give_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto import mock_aws

    from stepline.aws.dynamo_items import data_of
    from stepline.store.turns import visible_text
    from tests.support.dynamo_store import make_dynamo_store

    use_fake_aws(monkeypatch)
    with mock_aws():
        store, _ = make_dynamo_store(blobs=MemoryBlobStore())
        parts: list[dict[str, Any]] = [{"type": "text", "text": "x" * 6_000}, {"type": "text", "text": "y" * 6_000}]
        record = MessageRecord(
            user_id="u", conversation_id="c", message_id="m", seq=1, role="assistant", parts=parts,
            content=visible_text(parts), created_at=1,
        )  # fmt: skip
        item = store.encode(record)
        stored = data_of(item)
        assert "partPages" in stored and "xxxx" not in stored  # neither parts nor content
        assert store.decode(item) == record
        summary = record.model_copy(update={"content": "not the text parts joined"})
        assert store.decode(store.encode(summary)) == summary  # a content of its own is kept
