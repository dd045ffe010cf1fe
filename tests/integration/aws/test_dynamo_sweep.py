"""The reconciler's sweep on DynamoDB: working runs spread over GSI2's sharded keys, and a run still
under the one key of before the sharding (written by an older version) is found too."""

from __future__ import annotations

import pytest
from moto import mock_aws

from stepline.aws.dynamo_items import ACTIVE_RUN_SHARDS, active_run_key
from stepline.local.backend import TABLES
from tests.contract.test_store_contract import USER, start
from tests.support.aws_env import use_fake_aws
from tests.support.dynamo_store import make_dynamo_store


def test_working_runs_spread_over_the_shards_and_a_run_under_the_old_key_is_swept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_fake_aws(monkeypatch)
    with mock_aws():
        store, _ = make_dynamo_store()
        runs = [f"r{n}" for n in range(40)]
        for n, run in enumerate(runs):
            start(store, conversation=f"c{n}", run=run, now=1_000 + n)
        assert len({active_run_key(run) for run in runs}) > ACTIVE_RUN_SHARDS // 2  # not one hot key

        store.client.update_item(  # r0 as an older version left it: the unsharded key
            TableName=TABLES["AgentTable"],
            Key={"pk": {"S": f"U#{USER}#R#r0"}, "sk": {"S": "META"}},
            UpdateExpression="SET gsi2pk = :old",
            ExpressionAttributeValues={":old": {"S": "RUNS#active"}},
        )
        assert store.stale_runs(heartbeat_before=5_000, limit=3) == [(USER, "r0"), (USER, "r1"), (USER, "r2")]
        assert sorted(store.stale_runs(heartbeat_before=5_000)) == sorted((USER, run) for run in runs)
