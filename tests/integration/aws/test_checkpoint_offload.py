"""A checkpoint or a step record over `CHECKPOINT_OFFLOAD_BYTES` is stored in a blob (its item a pointer), and
read back whole."""

from __future__ import annotations

import pytest
from moto import mock_aws
from pydantic import JsonValue

from stepline.aws.dynamo_unit import DynamoUnit
from stepline.aws.dynamodb import CHECKPOINT_OFFLOAD_BYTES
from stepline.store.blobs import MemoryBlobStore
from stepline.store.records import CheckpointRecord, StepRecordRow
from tests.support.aws_env import use_fake_aws
from tests.support.dynamo_store import make_dynamo_store


def _checkpoint(text_bytes: int) -> CheckpointRecord:
    state = {"messages": [{"role": "user", "content": [{"type": "text", "text": "x" * text_bytes}]}], "steps": []}
    return CheckpointRecord(user_id="u-1", run_id="r-1", seq=1, step_index=0, state=state, created_at=1)


def test_a_large_checkpoint_is_a_blob_pointer_and_a_small_one_stays_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_aws(monkeypatch)
    with mock_aws():
        blobs = MemoryBlobStore()
        store, _ = make_dynamo_store(blobs=blobs)
        large, small = _checkpoint(CHECKPOINT_OFFLOAD_BYTES), _checkpoint(CHECKPOINT_OFFLOAD_BYTES // 4)

        item = {"pk": {"S": "U#u-1#R#r-1"}, "sk": {"S": "K#000001"}, **store.encode(large)}
        assert "data" not in item and "dataz" not in item and "blob" in item
        assert len(item["blob"]["S"]) < 1024  # the transaction writes a pointer, not the state
        assert store.decode(item) == large

        inline = store.encode(small)
        assert "blob" not in inline and "dataz" in inline  # inline, compressed (2 KB is over COMPRESS_FROM)
        assert store.decode(inline) == small


def _step(text_bytes: int) -> StepRecordRow:
    request: dict[str, JsonValue] = {
        "messages": [{"role": "user", "content": [{"type": "text", "text": "x" * text_bytes}]}]
    }
    return StepRecordRow(user_id="u-1", run_id="r-1", step_index=8, started_at=1, request=request)


def test_a_large_step_record_is_a_blob_pointer_and_reads_back_through_the_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_fake_aws(monkeypatch)
    with mock_aws():
        blobs = MemoryBlobStore()
        store, _ = make_dynamo_store(blobs=blobs)
        large, small = _step(CHECKPOINT_OFFLOAD_BYTES), _step(CHECKPOINT_OFFLOAD_BYTES // 4)
        encoded = store.encode(large)
        assert "data" not in encoded and len(encoded["blob"]["S"]) < 1024
        assert "blob" not in store.encode(small)
        unit = DynamoUnit(store)  # the step-end transaction's write path, as save_step takes it
        unit.put(large, new=True)
        unit.commit()
        assert DynamoUnit(store).run_steps("u-1", "r-1") == [large]
