"""A chat's stream notes that it follows its run, so the run's step keeps the chat's delta window."""

from __future__ import annotations

from pathlib import Path

from stepline.api.identity import DEFAULT_LOCAL_USER
from stepline.api.turns import latest_run_id
from stepline.runtime.watchers import NOTE_TTL_SECONDS, MemoryWatchers, delta_window_of
from stepline.store.event_batcher import DEFAULT_WINDOW, UNATTENDED_WINDOW
from tests.api.test_chat_api import send
from tests.support.server import config, running, write_book

STOP = {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}}


def test_a_chats_stream_notes_its_run_and_the_note_expires_after_it(tmp_path: Path) -> None:
    parts = [{"type": "text-start", "id": "t"}, {"type": "text-delta", "id": "t", "delta": "hi"}, STOP]
    model = write_book(tmp_path / "book.json", [{"name": "hi", "match": ["hi"], "steps": [{"parts": parts}]}])
    with running(config(model)) as server:
        services = server.server.backend.services
        assert isinstance(services.watchers, MemoryWatchers)
        with server.client() as client:
            before = services.clock()
            response = send(client, "watched-chat", "hi there")
        assert response.text.rstrip().endswith("data: [DONE]")
        store = services.store
        run_id = latest_run_id(store.list_messages(DEFAULT_LOCAL_USER, "watched-chat", limit=10).items)
        assert run_id is not None
        until = services.watchers.watched_until(DEFAULT_LOCAL_USER, run_id)
        assert until is not None and until >= before + NOTE_TTL_SECONDS * 1000
        run = store.get_run(DEFAULT_LOCAL_USER, run_id)
        assert delta_window_of(services, run) == DEFAULT_WINDOW  # followed
        later = services.clock
        services.clock = lambda: later() + int(NOTE_TTL_SECONDS * 1000) + 1  # the stream is long gone
        assert delta_window_of(services, run) == UNATTENDED_WINDOW
