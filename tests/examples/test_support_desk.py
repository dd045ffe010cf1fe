"""examples/support_desk: dynamic instructions from the run context, a per-call approval, compaction."""

from __future__ import annotations

import json
from typing import Any

from examples.support_desk.agent import CONTEXT, agent
from stepline.context.groups import summary_of, unpaired_calls
from stepline.context.policy import DEFAULT_SUMMARY_INSTRUCTIONS
from stepline.llm.base import ToolDefinition
from stepline.protocol.model_messages import ModelMessage, SystemModelMessage
from stepline.store import workspace
from stepline.testing import Harness, call, run_turn, scripted_model, text
from stepline.testing.script import FunctionModel

ANN = {"sub": "cust-ann", "name": "Ann", "custom:tier": "gold"}


def system_text(prompt: list[ModelMessage]) -> str:
    return "".join(m.content for m in prompt if isinstance(m, SystemModelMessage))


def test_instructions_come_from_the_claims_and_body_in_every_step_also_after_an_approval() -> None:
    model = scripted_model([call("refund_order", order_id="A-1001", amount=49, reason="damaged"), text("Fait.")])
    harness = Harness(agent, model=model, user_id="cust-ann", claims=ANN)
    waiting = harness.turn("Ma machine est cassée", body={"locale": "fr"})
    assert waiting.status == "waiting_approval"
    done = harness.resume(waiting.run_id, approve=True)  # another process, as a day later
    assert done.status == "completed"
    first, second = (system_text(c.prompt) for c in model.calls)
    assert first == second
    assert "talking to Ann (gold customer)" in first and "Answer in French" in first


def test_a_small_refund_goes_through_and_is_recorded_in_the_workspace() -> None:
    model = scripted_model([call("refund_order", order_id="A-1002", amount=5, reason="late"), text("Refunded.")])
    harness = Harness(agent, model=model, user_id="cust-ann", claims=ANN)
    result = harness.turn("my frother came late")
    assert result.invocations == ["BeginTurn", "ModelStep", "ModelStep", "FinalizeRun"]  # no wait
    assert result.tool("refund_order").output == {"refunded": 5.0, "record": "refunds/A-1002.json"}
    stored = workspace.read_file(harness.blobs, "cust-ann", result.conversation_id, "refunds/A-1002.json")
    assert json.loads(stored) == {"order_id": "A-1002", "amount": 5.0, "reason": "late", "run": result.run_id}


def test_a_large_refund_waits_and_denied_records_nothing() -> None:
    model = scripted_model([call("refund_order", order_id="A-1001", amount=249, reason="damaged"), text("Sorry.")])
    harness = Harness(agent, model=model, user_id="cust-ann", claims=ANN)
    result = harness.turn("refund everything", approve=(False, "needs a photo"))
    assert "AwaitInput" in result.invocations
    assert result.tool("refund_order").status == "denied"
    assert harness.blobs.list_keys(f"users/cust-ann/conversations/{result.conversation_id}/") == []


def test_a_customer_never_sees_another_customers_order() -> None:
    model = scripted_model([call("lookup_order", order_id="A-2001"), text("I cannot find that order.")])
    result = run_turn(agent, "where is A-2001?", model=model, user_id="cust-ann", claims=ANN)
    lookup = result.tool("lookup_order")
    assert lookup.status == "error" and lookup.error is not None and "no order A-2001" in lookup.error
    assert "Grinder" not in json.dumps(result.message)


def test_a_long_conversation_is_summarized_by_the_policy_and_later_turns_carry_the_summary() -> None:
    def answer(prompt: list[ModelMessage], tools: list[ToolDefinition]) -> Any:
        if system_text(prompt) == DEFAULT_SUMMARY_INSTRUCTIONS:
            return text("Ann asked three questions about her espresso machine; each was answered.")
        return text(" ".join(f"detail{n}" for n in range(300)))  # a long answer, every turn

    small = agent.model_copy(
        update={"context": CONTEXT.model_copy(update={"context_window": 2_500, "output_reserve": 100})}
    )
    model = FunctionModel(answer)
    harness = Harness(small, model=model, user_id="cust-ann", claims=ANN)
    conversation = harness.turn("first question").conversation_id
    turns = [harness.turn(q, conversation_id=conversation) for q in ("second", "third", "fourth", "fifth", "sixth")]
    assert all(t.status == "completed" for t in turns)
    summarized = [t for t in turns if any(p["type"] == "data-context-summary" for p in t.stored_message["parts"])]
    assert summarized, "a compaction step ran"
    assert turns[-1].message["metadata"]["context"]["history"]["summarizedThrough"]  # the next turns carry it
    final = model.calls[-1].prompt
    assert any(summary_of(m) is not None for m in final) and unpaired_calls(final) == []
    assert "talking to Ann" in system_text(final)  # the dynamic instructions are kept
