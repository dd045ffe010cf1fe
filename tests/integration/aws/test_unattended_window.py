"""A run nobody started from a chat holds its deltas for the unattended window, not the chat's.

The real ASL on moto, a paced scripted model streaming one text part for about 2 s. A headless
run (`trigger="automation"`) may write its leading delta, then at most one batch per unattended
window (1 s), then the rest at the part's end: a bound that load can only make looser (a slow
store widens the window, it never narrows it). At the chat's 50 ms window the same step writes
tens of batches. The message is the same either way.
"""

from __future__ import annotations

import math

from stepline.llm.scripted import ScriptedModel
from stepline.runtime.services import Services
from stepline.runtime.turn import begin_turn
from stepline.runtime.worker import delta_window_of
from stepline.store.event_batcher import DEFAULT_WINDOW, UNATTENDED_WINDOW
from stepline.store.memory import MemoryStore
from stepline.store.records import RunRecord
from tests.support.local_aws import local_aws
from tests.support.runs import STOP, USER, final_message

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


def test_a_headless_run_writes_a_delta_batch_per_unattended_window_at_most() -> None:
    parts = [
        {"type": "text-start", "id": "t"},
        *({"type": "text-delta", "id": "t", "delta": f"w{i} "} for i in range(DELTAS)),
        {"type": "text-end", "id": "t"},
        STOP,
    ]
    model = ScriptedModel.from_script([{"parts": parts, "delayMs": PAUSE_MS}])
    with local_aws(model) as aws:
        begin_turn(
            aws.services,
            USER,
            conversation_id="c-headless",
            run_id="run-headless",
            assistant_message_id="a-headless",
            user_message={"id": "u-headless", "role": "user", "parts": [{"type": "text", "text": "go"}]},
            unattended={"source": "test"},
        )
        assert aws.wait_execution("run-headless", timeout=120) == "SUCCEEDED"
        events = aws.services.store.events_after(USER, "run-headless", 0, now=aws.services.clock())
        batches = [e for e in events if e.type == "delta"]
        # as long as it really took (a loaded machine streams slower, and the bound grows with it)
        streamed = (batches[-1].created_at - batches[0].created_at) / 1000
        # the leading delta, one batch per window that passed, the rest at the part's end
        assert len(batches) <= 1 + math.ceil(streamed / UNATTENDED_WINDOW) + 1, [len(b.chunks) for b in batches]
        assert final_message(aws, "run-headless")["content"] == "".join(f"w{i} " for i in range(DELTAS))
