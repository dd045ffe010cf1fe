"""A child's progress reaches the parent's message as preliminary tool outputs, and `ai@7` agrees.

The parent's log carries, for its agent-tool call, `tool-output-available` with `preliminary: true`
and the child's UIMessage so far, at the end of the child's steps 1, 2, 4, … and at each wait; the
real `ai@7` reducer ends the parent's stream with exactly the stored message, whatever position a
client resumed from.
"""

from __future__ import annotations

from typing import Any

from stepline import Agent, tool
from stepline.protocol._json import dumps
from stepline.runtime.child_results import child_run_id
from stepline.runtime.child_stream import mirrors_at
from stepline.store.replay import chunks_of
from stepline.testing import Harness, call, scripted_model, text
from tests.support.sdk_oracle import SdkOracle


@tool
def note(n: int) -> str:
    """Take a note."""
    return f"note {n}"


@tool(approval="user-approval")
def publish(title: str) -> str:
    """Publish."""
    return "published"


def _preliminary(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in chunks if c["type"] == "tool-output-available" and c.get("preliminary")]


def test_the_steps_written_are_the_powers_of_two_the_waits_and_the_last() -> None:
    assert [n for n in range(20) if mirrors_at(n, "continue")] == [0, 1, 3, 7, 15]
    assert mirrors_at(5, "await-approval") and mirrors_at(6, "await-client")
    assert mirrors_at(5, "finished") and mirrors_at(5, "failed") and not mirrors_at(5, "aborted")


def test_the_child_is_seen_inside_the_parent_and_ai7_ends_with_the_stored_message(sdk: SdkOracle) -> None:
    steps = [*[call("note", n=n) for n in range(4)], call("publish", title="T"), text("all noted")]
    researcher = Agent(name="researcher", tools=[note, publish], model=scripted_model(steps))
    lead_model = scripted_model([call("researcher", task="take notes"), text("done")])
    lead = Agent(name="lead", model=lead_model, tools=[researcher.as_tool()])
    harness = Harness(lead)
    waiting = harness.turn("go")
    early = _preliminary(waiting.chunks)
    assert [len(c["output"]["parts"]) for c in early] == [2, 4, 8, 10]  # steps 0, 1, 3 and the wait (step 4)
    assert {c["toolCallId"] for c in early} == {waiting.tool_calls[0].tool_call_id}
    last = early[-1]["output"]
    assert last["role"] == "assistant" and last["parts"][-1]["state"] == "approval-requested"
    assert {c["output"]["metadata"]["agent"] for c in early} == {"researcher"}  # who works, for the UI
    child_run = child_run_id(waiting.run.run_id, waiting.tool_calls[0].tool_call_id)
    assert {c["output"]["metadata"]["runId"] for c in early} == {child_run}
    assert all("status" not in c["output"]["metadata"] for c in early)  # still working
    assert last["parts"][-1]["type"] == "tool-publish"  # the child's approval, visible in the parent
    # While the parent waits, its stored snapshot lags the children's writes: a client reads it, then
    # the log after its seq (the resume contract), and has what the whole log gives.
    reduced_waiting = sdk.call("reduce", chunks=waiting.chunks)
    message = harness.store.get_message("test-user", waiting.conversation_id, waiting.run.assistant_message_id)
    after = list(chunks_of(harness.store.events_after("test-user", waiting.run.run_id, message.snapshot_seq, now=0)))
    resumed = sdk.call(
        "reduce", chunks=after, message={"id": message.message_id, "role": "assistant", "parts": message.parts}
    )
    assert reduced_waiting["errors"] == [] == resumed["errors"]
    assert resumed["final"]["parts"] == reduced_waiting["final"]["parts"]
    assert _preliminary(after)  # the children's progress is in what a resuming client reads
    done = harness.resume(waiting.run.run_id, approve=True)
    assert done.status == "completed" and done.tool("researcher").output == "all noted"
    reduced = sdk.call("reduce", chunks=done.chunks)
    assert reduced["errors"] == [] and reduced["final"]["parts"] == done.stored_message["parts"]
    # The child's last step is written too, saying it ended, before the call's final output.
    outputs: list[dict[str, Any]] = [
        c for c in done.chunks if c["type"] == "tool-output-available" and c["toolCallId"] == early[0]["toolCallId"]
    ]
    assert outputs[-2]["preliminary"] is True and outputs[-2]["output"]["metadata"]["status"] == "completed"
    assert outputs[-2]["output"]["parts"][-1]["text"] == "all noted" and "preliminary" not in outputs[-1]
    (part,) = [p for p in done.stored_message["parts"] if p["type"] == "tool-researcher"]
    assert part["state"] == "output-available" and part["output"] == "all noted" and "preliminary" not in part
    # Resumed from any position: the stored snapshot then the log after it is the same message.
    events = harness.store.events_after("test-user", done.run.run_id, 0, now=0)
    for event in events:
        suffix = chunks_of(harness.store.events_after("test-user", done.run.run_id, event.seq, now=0))
        assert [*chunks_of([e for e in events if e.seq <= event.seq]), *suffix] == list(chunks_of(events))
    # Linear: what the mirrors wrote is at most twice the child's final message, plus one per wait.
    final_child = dumps(early[-1]["output"])
    assert sum(len(dumps(c["output"])) for c in early[:-1]) <= 2 * len(final_child)
