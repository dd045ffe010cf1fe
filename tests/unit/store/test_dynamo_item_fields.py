"""A DynamoDB item's record JSON leaves out the fields that are None by default and None, and is
stored compressed from `COMPRESS_FROM` bytes.

Write units are counted per started KB, and the run item is written several times a step: its nulls
took a run's item over 1 KB, and so did a deployment's ids (a UUID user, bench/cost.py). Counted on
the encoded item, never timed.
"""

from __future__ import annotations

import pytest

from stepline.aws.dynamo_items import COMPRESS_FROM, data_of
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
            data = loads_strict(data_of(item))
            assert isinstance(data, dict)
            assert None not in data.values(), data  # no null written
            assert store.decode(item) == record  # and every field read back as it was
        assert "error" in loads_strict(data_of(store.encode(run.model_copy(update={"error": {"message": "x"}}))))


DIGEST = "382fa88e4114b344a5a42046edec1623de6b182dabb9ccfff90892f1cb8000de"


def test_a_record_from_the_threshold_is_stored_compressed_under_a_write_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto import mock_aws

    from bench.cost_meter import item_size
    from tests.support.dynamo_store import make_dynamo_store

    use_fake_aws(monkeypatch)
    with mock_aws():
        store, _ = make_dynamo_store()
        user = "3f2b9c1e-8a4d-4e6b-9f0a-2c7d5e1b8a63"  # a Cognito `sub`: the size of a deployment's user ids
        small = RunRecord(
            user_id="u", run_id="run-1", conversation_id="c", request_message_id="m1",
            assistant_message_id="m2", assistant_message_seq=2, started_at=1,
        )  # fmt: skip
        run = small.model_copy(
            update={
                "user_id": user,
                "run_id": "run-9917d9d5f4784b30b74269dc3b91778c",
                "conversation_id": "conv-8f90c7f54603432dab669ebccfd16957",
                "assistant_message_id": "msg-bef3b8a9abd149f998b1a5b39f5cf678",
                "context": {
                    "claims": {"sub": user}, "body": {"metadata": {}},
                    "unattended": {"trigger": "api", "requestDigest": DIGEST, "metadata": {}},
                },
                "active_step_index": 9, "last_event_seq": 100, "checkpoint_seq": 12, "finish_reason": "stop",
                "ended_at": 1796688652041, "heartbeat_at": 1796688651921, "version": 12, "trigger": "automation",
                "usage": {"inputTokens": 18500, "outputTokens": 1600},
                "trace": "00-e86fb07bc655785e25e6b6cd87995a60-96fd318890e645da-01",
                "notified": ["approval:aitxt-d2557f35f4794c57b001e681", "end"],
                "agent": "default", "agent_fingerprint": "b799f368ed436692", "status": "completed",
            }
        )  # fmt: skip
        short = store.encode(small)
        assert "data" in short and "dataz" not in short  # readable JSON under the threshold
        item = store.encode(run)
        assert len(data_of(item).encode()) >= COMPRESS_FROM and "data" not in item
        key = {"pk": {"S": f"U#{user}#R#{run.run_id}"}, "sk": {"S": "META"}, "rev": {"N": "26"}}
        assert item_size({**key, "kind": item["kind"], "data": {"S": data_of(item)}}) > 1024  # as JSON: two units
        assert item_size({**key, **item}) <= 1024  # compressed: one
        assert store.decode(item) == run
        # an item written before compression, its JSON in `data` however long, reads as it did
        assert store.decode({"kind": item["kind"], "data": {"S": data_of(item)}}) == run
