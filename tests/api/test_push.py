"""`stepline dev` streams by notification: with the fallback poll out of reach, every chunk still
arrives, in order, once, and the stream ends with `[DONE]` (the workers wake the stream)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepline.api.deps import ApiOptions
from stepline.api.identity import DEFAULT_LOCAL_USER
from stepline.local.dev import LOCAL_DELTA_WINDOW
from stepline.protocol.sse import decode_ui_message_stream
from stepline.runtime.stream_push import InProcessNotifier
from stepline.store.event_batcher import DEFAULT_WINDOW
from tests.api.test_chat_api import send
from tests.support.server import config, running, write_book

NO_POLL = ApiOptions(poll_seconds=600, push_poll_seconds=600, wait_poll_seconds=600, stream_max_seconds=60)
"""A stream that waited for a poll would end at `stream_max_seconds` without `[DONE]`."""


@pytest.mark.parametrize("storage", ["memory", "data folder"])
def test_a_chat_streams_to_its_end_by_notifications_alone(tmp_path: Path, storage: str) -> None:
    deltas = [f"w{i} " for i in range(30)]
    parts = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        *({"type": "text-delta", "id": "t", "delta": d} for d in deltas),
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}},
    ]
    model = write_book(
        tmp_path / "book.json", [{"name": "paced", "match": ["paced"], "steps": [{"parts": parts, "delayMs": 5}]}]
    )
    data_dir = tmp_path / "data" if storage == "data folder" else None
    with running(config(model), api=NO_POLL, data_dir=data_dir) as server:
        services = server.server.backend.services
        notifier = services.stream_push
        assert isinstance(notifier, InProcessNotifier)
        # SQLite's appends are cheap: deltas are held 10 ms at most there; moto stands for DynamoDB's costs.
        assert services.delta_window == (DEFAULT_WINDOW if data_dir is None else LOCAL_DELTA_WINDOW)
        with server.client() as client:
            response = send(client, "push-chat", "paced please")
    assert response.text.rstrip().endswith("data: [DONE]")
    chunks = decode_ui_message_stream(response.text)
    text = "".join(c.delta for c in chunks if c.type == "text-delta")  # type: ignore[union-attr]
    assert text == "".join(deltas)
    assert [c.type for c in chunks][-1] == "finish"
    ids = [line for line in response.text.splitlines() if line.startswith("id: ")]
    assert len(ids) == len(set(ids)), "no chunk is sent twice"
    start = chunks[0]
    assert start.type == "start" and start.message_metadata is not None  # type: ignore[union-attr]
    run_id = start.message_metadata["runId"]  # type: ignore[union-attr]
    assert notifier.subscribers(DEFAULT_LOCAL_USER, run_id) == 0, "a stream that ended unsubscribed"
