"""The streams' notes on DynamoDB: one item per run beside its other items, read by key only."""

from __future__ import annotations

import pytest
from moto import mock_aws

from stepline.aws.dynamo_watchers import DynamoWatchers
from stepline.store.ports import TurnStart
from tests.support.aws_env import use_fake_aws
from tests.support.dynamo_store import TABLES, make_dynamo_store

USER, RUN = "u1", "r1"


def test_a_note_is_read_back_per_user_beside_the_runs_items(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_aws(monkeypatch)
    with mock_aws():
        store, _ = make_dynamo_store()
        store.start_turn(
            USER, TurnStart(conversation_id="c", run_id=RUN, assistant_message_id="a", user_message=None, now=1)
        )
        watchers = DynamoWatchers(store.client, TABLES["AgentTable"])
        assert watchers.watched_until(USER, RUN) is None
        watchers.note(USER, RUN, until_ms=5_000_000)
        watchers.note(USER, RUN, until_ms=5_030_000)  # the stream's next note
        assert watchers.watched_until(USER, RUN) == 5_030_000
        watchers.note(USER, RUN, until_ms=5_010_000)  # a stream whose clock lags shortens nothing
        assert watchers.watched_until(USER, RUN) == 5_030_000
        assert watchers.watched_until("u2", RUN) is None  # another user's run of that id
        key = {"pk": {"S": f"U#{USER}#R#{RUN}"}, "sk": {"S": "W#"}}
        item = store.client.get_item(TableName=TABLES["AgentTable"], Key=key)["Item"]
        assert int(item["expires_at"]["N"]) == 5_030 + 24 * 3600  # DynamoDB's TTL removes it a day later
        # the run's own reads do not see it
        assert store.get_run(USER, RUN).status == "queued"
        assert store.list_tool_calls(USER, RUN) == []
