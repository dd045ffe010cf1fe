"""Coalesced notifications (`CoalescingNotifier`, as on AWS: one per burst of a run's appends): with the
fallback poll out of reach, a watcher still gets every chunk once and in order to `[DONE]`, and a
late watcher that comes in with its last id gets exactly the rest, while the writer sent far
fewer notifications than it made appends (the streams' linger covers the dropped ones)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from stepline.api.deps import ApiOptions
from stepline.api.identity import DEFAULT_LOCAL_USER
from stepline.protocol.sse import SseDecoder
from stepline.runtime.stream_push import CoalescingNotifier, InProcessNotifier
from tests.api.test_chat_api import user_message
from tests.support.server import config, running, write_book

NO_FALLBACK = ApiOptions(poll_seconds=0.02, push_poll_seconds=600, wait_poll_seconds=600, stream_max_seconds=30)
"""Only the linger's fast poll is in reach: a stream left waiting for the fallback poll would end at
`stream_max_seconds` without `[DONE]`."""
WINDOW = 0.4


class _CountingNotifier(InProcessNotifier):
    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    def notify(self, user_id: str, run_id: str, seq: int) -> None:
        self.sent += 1
        super().notify(user_id, run_id, seq)


def _book(tmp_path: Path, deltas: list[str]) -> str:
    parts: list[dict[str, Any]] = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        *({"type": "text-delta", "id": "t", "delta": d} for d in deltas),
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}},
    ]
    script = {"name": "paced", "match": ["paced"], "steps": [{"parts": parts, "delayMs": 40}]}
    return write_book(tmp_path / "book.json", [script])


def _frames(lines: list[str]) -> list[tuple[str | None, str]]:
    return [(e.id, e.data) for e in SseDecoder().feed("".join(line + "\n" for line in lines))]


def test_every_chunk_reaches_a_watcher_and_a_late_watcher_resumes_from_its_last_id(tmp_path: Path) -> None:
    deltas = [f"w{i} " for i in range(40)]
    with running(config(_book(tmp_path, deltas)), api=NO_FALLBACK) as server:
        services = server.server.backend.services
        inner = _CountingNotifier()
        services.stream_push = CoalescingNotifier(inner, window=WINDOW)
        body = {"id": "coalesced-chat", "messages": [user_message("paced please")], "trigger": "submit-message"}
        first: list[str] = []
        late: dict[str, Any] = {}
        with server.client() as client, server.client() as other:

            def watch_late(last_id: str) -> None:
                response = other.get("/api/chat/coalesced-chat/stream", headers={"last-event-id": last_id})
                late["status"], late["text"] = response.status_code, response.text

            watcher: threading.Thread | None = None
            with client.stream("POST", "/api/chat", json=body) as response:
                assert response.status_code == 200
                for line in response.iter_lines():
                    first.append(line)
                    deltas_seen = sum(1 for _, data in _frames(first) if '"text-delta"' in data)
                    if watcher is None and deltas_seen >= 10 and line == "":
                        last_id = _frames(first)[-1][0]
                        assert last_id is not None
                        late["after"] = len(_frames(first))
                        watcher = threading.Thread(target=watch_late, args=(last_id,))
                        watcher.start()
            assert watcher is not None
            watcher.join(60)
        run_id = json.loads(_frames(first)[0][1])["messageMetadata"]["runId"]
        appends = len(services.store.events_after(DEFAULT_LOCAL_USER, run_id, 0, now=0))
    frames = _frames(first)
    assert frames[-1][1] == "[DONE]", "the watcher read to the end by the linger's poll"
    chunks = [json.loads(data) for _, data in frames[:-1]]
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert text == "".join(deltas)
    ids = [i for i, _ in frames if i is not None]
    assert len(ids) == len(set(ids)), "no chunk is sent twice"
    assert late["status"] == 200
    assert _frames(late["text"].splitlines()) == frames[late["after"] :], "the late watcher got exactly the rest"
    # Fewer notifications than appends (under load the writer's delta window widens, so appends
    # shrink too: a fixed ratio would measure the machine, not the coalescing).
    assert 0 < inner.sent < appends, (inner.sent, appends)
