"""Test your agent without a provider: scripted models, and turns run through the durable path in memory.

    from stepline.testing import call, run_turn, scripted_model, text

    def test_it_writes_the_note() -> None:
        model = scripted_model([call("write_note", title="todo", body="milk"), text("Saved.")])
        result = run_turn(agent, "note: milk", model=model, approve=True)
        assert result.status == "completed" and result.text == "Saved."
        assert result.tool("write_note").output == {"saved": "todo"}

docs/agents.md, "Testing your agent", describes both halves and the script format.
"""

from .harness import Answer, Approve, Harness, HarnessError, run_turn, run_turn_async
from .result import ToolExecution, TurnResult
from .script import FunctionModel, Step, StepValue, call, fail, reasoning, script, scripted_model, step, text

__all__ = [
    "Answer",
    "Approve",
    "FunctionModel",
    "Harness",
    "HarnessError",
    "Step",
    "StepValue",
    "ToolExecution",
    "TurnResult",
    "call",
    "fail",
    "reasoning",
    "run_turn",
    "run_turn_async",
    "script",
    "scripted_model",
    "step",
    "text",
]
