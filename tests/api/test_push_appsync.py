"""Stream push through the AppSync Events adapter, end to end: `stepline dev` with its notifier
replaced by `AppSyncEventsNotifier` on a local Event API (tests/support/fake_appsync_events.py).

The workers publish over HTTP, the stream subscribes over the WebSocket, as the model step and
the stream function do on AWS. With every poll out of reach a chat still streams to `[DONE]` (the
notifications alone carry it); with the socket dropped mid-stream and reconnections refused, it
still ends with every chunk once (the fallback poll carries the rest).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from stepline.api.deps import ApiOptions
from stepline.aws.appsync_events import AppSyncEventsNotifier
from stepline.protocol.sse import decode_ui_message_stream
from tests.api.test_chat_api import send
from tests.support.fake_appsync_events import FakeEventApi, signer_for
from tests.support.server import config, running, write_book

NO_POLL = ApiOptions(poll_seconds=600, push_poll_seconds=600, wait_poll_seconds=600, stream_max_seconds=60)
"""A stream that waited for a poll would end at `stream_max_seconds` without `[DONE]`."""
FALLBACK = ApiOptions(poll_seconds=600, push_poll_seconds=0.2, wait_poll_seconds=600, stream_max_seconds=60)
"""Only the fallback poll of a subscribed stream is in reach."""


def _book(tmp_path: Path, deltas: list[str], delay_ms: int) -> str:
    parts: list[dict[str, Any]] = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        *({"type": "text-delta", "id": "t", "delta": d} for d in deltas),
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}},
    ]
    script = {"name": "paced", "match": ["paced"], "steps": [{"parts": parts, "delayMs": delay_ms}]}
    return write_book(tmp_path / "book.json", [script])


def _assert_complete(body: str, deltas: list[str]) -> None:
    assert body.rstrip().endswith("data: [DONE]")
    chunks = decode_ui_message_stream(body)
    assert "".join(c.delta for c in chunks if c.type == "text-delta") == "".join(deltas)  # type: ignore[union-attr]
    assert [c.type for c in chunks][-1] == "finish"
    ids = [line for line in body.splitlines() if line.startswith("id: ")]
    assert len(ids) == len(set(ids)), "no chunk is sent twice"


def test_a_chat_streams_to_its_end_by_event_api_notifications_alone(tmp_path: Path) -> None:
    deltas = [f"w{i} " for i in range(30)]
    with FakeEventApi() as fake, running(config(_book(tmp_path, deltas, 5)), api=NO_POLL) as server:
        server.server.backend.services.stream_push = AppSyncEventsNotifier(fake.api, signer=signer_for(fake.api))
        with server.client() as client:
            response = send(client, "appsync-push-chat", "paced please")
        fake.wait_for(lambda: not any(fake.subscribers(p.channel) for p in fake.published))
    _assert_complete(response.text, deltas)
    assert fake.delivered > 0 and fake.subscribe_errors == 0
    assert len({p.channel for p in fake.published}) == 1, "one run, one channel"


def test_a_dropped_socket_mid_stream_costs_poll_intervals_never_an_event(tmp_path: Path) -> None:
    deltas = [f"d{i} " for i in range(100)]  # 2 s of streaming: the drop comes well before the end
    with FakeEventApi() as fake, running(config(_book(tmp_path, deltas, 20)), api=FALLBACK) as server:
        server.server.backend.services.stream_push = AppSyncEventsNotifier(fake.api, signer=signer_for(fake.api))
        dropped_at: list[int] = []

        def drop_mid_stream() -> None:
            fake.wait_for(lambda: fake.delivered >= 3, timeout=30)
            fake.refuse_connections = True
            fake.drop_connections()
            dropped_at.append(len(fake.published))

        dropper = threading.Thread(target=drop_mid_stream)
        dropper.start()
        with server.client() as client:
            response = send(client, "appsync-drop-chat", "paced please")
        dropper.join(30)
    _assert_complete(response.text, deltas)
    assert dropped_at and len(fake.published) > dropped_at[0], "the run went on writing after the drop"
    assert len(fake.handshakes) >= 1 and fake.subscribers(fake.published[0].channel) == 0
