"""A DynamoDB item's record JSON leaves out the fields that are None by default and None.

Write units are counted per started KB, and the run item is written several times a step: its nulls
took a run's item over 1 KB (bench/cost.py). Counted on the encoded item, never timed.
"""

from __future__ import annotations

import pytest

from stepline.protocol._json import loads_strict
from stepline.store.records import RunRecord, ToolCallRecord
from tests.support.aws_env import use_fake_aws


def test_an_item_leaves_out_its_default_nulls_and_reads_them_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto import mock_aws

    from tests.support.dynamo_store import make_dynamo_store

    use_fake_aws(monkeypatch)
    with mock_aws():
        store, _ = make_dynamo_store()
        run = RunRecord(
            user_id="u", run_id="run-1", conversation_id="c", request_message_id="m1",
            assistant_message_id="m2", assistant_message_seq=2, started_at=1,
        )  # fmt: skip
        call = ToolCallRecord(user_id="u", run_id="run-1", tool_call_id="t1", tool_name="read", input=None)
        for record in (run, call, run.model_copy(update={"error": {"message": "boom"}, "ended_at": 5})):
            item = store.encode(record)
            data = loads_strict(item["data"]["S"])
            assert isinstance(data, dict)
            assert None not in data.values(), data  # no null written
            assert store.decode(item) == record  # and every field read back as it was
        assert "error" in loads_strict(store.encode(run.model_copy(update={"error": {"message": "x"}}))["data"]["S"])
