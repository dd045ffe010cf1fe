"""A run nobody started from a chat, or nobody follows, holds its deltas for the unattended window.

The real ASL on moto, a paced scripted model streaming one text part for about 2 s. A headless
run (`trigger="automation"`), and a chat's run whose streams have all gone (its last note expired,
`stepline.runtime.watchers`), may write the leading delta, then at most one batch per unattended
window (1 s), then the rest at the part's end: a bound that load can only make looser (a slow
store widens the window, it never narrows it). At the chat's 100 ms window the same step writes
tens of batches. The message is the same either way. A run nobody follows wakes no stream per
append (each notification is a billed publish on AWS): only its step's end notifies.
"""

from __future__ import annotations

import math
from typing import Any

from stepline.llm.scripted import ScriptedModel
from stepline.runtime.services import Services
from stepline.runtime.stream_push import InProcessNotifier
from stepline.runtime.watchers import MemoryWatchers, delta_window_of
from stepline.store.event_batcher import DEFAULT_WINDOW, UNATTENDED_WINDOW
from stepline.store.memory import MemoryStore
from stepline.store.records import RunRecord
from tests.support.local_aws import LocalAws, local_aws
from tests.support.runs import STOP, USER, begin, final_message

DELTAS = 100
PAUSE_MS = 20


def test_the_window_follows_the_runs_trigger() -> None:
    services = Services(model=None, tools=[], store=MemoryStore())  # type: ignore[arg-type]  # no model runs here
    web = RunRecord(
        user_id="u",
        run_id="r1",
        conversation_id="c",
        request_message_id="m",
        assistant_message_id="a",
        assistant_message_seq=2,
        started_at=0,
    )
    headless = web.model_copy(update={"trigger": "automation"})
    assert (delta_window_of(services, web), delta_window_of(services, headless)) == (DEFAULT_WINDOW, UNATTENDED_WINDOW)
    assert DEFAULT_WINDOW < UNATTENDED_WINDOW


def _paced_model() -> ScriptedModel:
    parts = [
        {"type": "text-start", "id": "t"},
        *({"type": "text-delta", "id": "t", "delta": f"w{i} "} for i in range(DELTAS)),
        {"type": "text-end", "id": "t"},
        STOP,
    ]
    return ScriptedModel.from_script([{"parts": parts, "delayMs": PAUSE_MS}])


def _batches_within_the_unattended_bound(aws: LocalAws, run_id: str) -> None:
    events = aws.services.store.events_after(USER, run_id, 0, now=aws.services.clock())
    batches = [e for e in events if e.type == "delta"]
    # as long as it really took (a loaded machine streams slower, and the bound grows with it)
    streamed = (batches[-1].created_at - batches[0].created_at) / 1000
    # the leading delta, one batch per window that passed, the rest at the part's end
    assert len(batches) <= 1 + math.ceil(streamed / UNATTENDED_WINDOW) + 1, [len(b.chunks) for b in batches]
    assert final_message(aws, run_id)["content"] == "".join(f"w{i} " for i in range(DELTAS))


class CountingNotifier(InProcessNotifier):
    """The in-process notifier, counting what the run's writers publish."""

    def __init__(self) -> None:
        super().__init__()
        self.published: list[int] = []

    def notify(self, user_id: str, run_id: str, seq: int) -> None:
        self.published.append(seq)
        super().notify(user_id, run_id, seq)


def _delta_seqs(aws: LocalAws, run_id: str) -> set[int]:
    events = aws.services.store.events_after(USER, run_id, 0, now=aws.services.clock())
    return {e.seq for e in events if e.type == "delta"}


def _start(aws: LocalAws, run_id: str, **options: Any) -> None:
    begin(aws, "go", run_id=run_id, **options)
    assert aws.wait_execution(run_id, timeout=120) == "SUCCEEDED"


def test_a_headless_run_writes_a_delta_batch_per_unattended_window_at_most() -> None:
    with local_aws(_paced_model()) as aws:
        _start(aws, "run-headless", unattended={"source": "test"})
        _batches_within_the_unattended_bound(aws, "run-headless")


def test_a_chats_run_that_its_streams_have_left_writes_at_the_unattended_window() -> None:
    watchers, push = MemoryWatchers(), CountingNotifier()
    with local_aws(_paced_model(), watchers=watchers, stream_push=push) as aws:
        watchers.note(USER, "run-left", until_ms=aws.services.clock() - 1)  # a stream followed it, then went
        _start(aws, "run-left")
        _batches_within_the_unattended_bound(aws, "run-left")
        assert aws.services.store.get_run(USER, "run-left").trigger == "web"  # a chat's run all the same
        # the turn's start, the step's end and the run's end woke its streams; no delta batch did
        assert push.published and not set(push.published) & _delta_seqs(aws, "run-left"), push.published


def test_a_chats_run_that_a_stream_follows_keeps_the_chats_window() -> None:
    watchers, push = MemoryWatchers(), CountingNotifier()
    with local_aws(_paced_model(), watchers=watchers, stream_push=push) as aws:
        watchers.note(USER, "run-watched", until_ms=aws.services.clock() + 600_000)
        _start(aws, "run-watched")
        events = aws.services.store.events_after(USER, "run-watched", 0, now=aws.services.clock())
        batches = [e for e in events if e.type == "delta"]
        streamed = (batches[-1].created_at - batches[0].created_at) / 1000
        # more batches than the unattended window could have written in that time
        assert len(batches) > 2 + math.ceil(streamed / UNATTENDED_WINDOW), len(batches)
        assert _delta_seqs(aws, "run-watched") <= set(push.published)  # each batch woke the stream that follows
