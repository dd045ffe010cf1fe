"""Nothing stored in DynamoDB exceeds 400 KB: large payloads go to S3 first, the item keeps a pointer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from bench.cost_meter import item_size  # DynamoDB's item size rules on the wire form
from stepline.aws.s3 import S3BlobStore
from stepline.local.resources import create_bucket
from stepline.store.ports import SnapshotUpdate, TurnStart
from stepline.store.records import NewEvent, StepRecordRow, ToolCallRecord
from tests.support.dynamo_store import TABLES, make_dynamo_store

USER = "alice"


@pytest.fixture
def aws() -> Iterator[Any]:
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        create_bucket(s3, "stepline-artifacts")
        store, _ = make_dynamo_store(blobs=S3BlobStore("stepline-artifacts", client=s3))
        yield store, boto3.client("dynamodb", region_name="us-east-1"), s3


def test_a_5_mb_tool_output_and_a_2000_part_message_stay_under_400_kb(aws: Any) -> None:
    store, dynamodb, s3 = aws
    store.start_turn(
        USER,
        TurnStart(
            conversation_id="c1",
            run_id="r1",
            assistant_message_id="a1",
            user_message={"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]},
            now=1,
        ),
    )
    store.mark_running(USER, "r1", now=1)
    big_output = {"rows": ["x" * 1_000 for _ in range(5_000)]}  # ~5 MB
    parts = [{"type": "text", "text": f"part {i} " + "y" * 200, "state": "done"} for i in range(2_000)]
    call = ToolCallRecord(
        user_id=USER, run_id="r1", tool_call_id="c1", tool_name="export", status="success", output=big_output
    )
    store.save_step(
        USER,
        "r1",
        step=StepRecordRow(user_id=USER, run_id="r1", step_index=0, started_at=1),
        tool_calls=[call],
        snapshot=SnapshotUpdate(parts=parts, metadata=None, snapshot_seq=1),
        checkpoint_state={"messages": big_output},
        now=2,
    )
    store.append_events(
        USER,
        "r1",
        [
            NewEvent(
                type="tool_result", chunks=[{"type": "tool-output-available", "toolCallId": "c1", "output": big_output}]
            )
        ],
        now=3,
    )
    for table in TABLES.values():
        items = dynamodb.scan(TableName=table)["Items"]
        assert items
        assert max(item_size(i) for i in items) < 400_000, table
    # the pointers lead back to the exact content
    assert store.list_tool_calls(USER, "r1")[0].output == big_output
    assert len(store.get_message(USER, "c1", "a1").parts) == 2_000
    assert store.latest_checkpoint(USER, "r1").state == {"messages": big_output}
    assert store.events_after(USER, "r1", 0, now=4)[0].chunks[0]["output"] == big_output
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="stepline-artifacts")["Contents"]]
    assert keys and all(k.startswith(f"users/{USER}/blobs/sha256/") for k in keys)
