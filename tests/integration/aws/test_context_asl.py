"""The context policy on the real state machine (the ASL run by `stepline dev`'s backend), across
continue-as-new executions: a run longer than its model's window completes, each compaction once."""

from __future__ import annotations

from stepline import Agent
from stepline.agent.loading import AgentSet
from stepline.context.policy import ContextPolicy
from stepline.loop.stop import is_step_count
from stepline.store.history import SUMMARY_PART
from tests.support.local_aws import local_aws
from tests.support.long_task import LongTask, long_task_model, read_tool
from tests.support.runs import begin, final_message, replayed

TOTAL = 24


def test_compaction_over_continue_as_new_executions_keeps_every_pair_and_summarizes_each_part_once() -> None:
    task = LongTask(total=TOTAL)
    model = long_task_model(task)
    agent = Agent(
        name="long",
        model=model,
        tools=[read_tool(6_000)],
        context=ContextPolicy(context_window=32_000, output_reserve=2_000, keep_recent=3),
        stop_when=is_step_count(TOTAL + 5),
    )
    with local_aws(model, agents=AgentSet.single(agent), steps_per_execution=5) as aws:
        run_id = begin(aws, f"Read all {TOTAL} parts.")
        generations = (TOTAL + 1 + 4) // 5  # five steps an execution, the answer the last step
        for generation in range(generations):
            assert aws.wait_execution(run_id, timeout=120, generation=generation) == "SUCCEEDED", generation
        message = final_message(aws, run_id)
        assert message["status"] == "completed" and message["content"] == f"All {TOTAL} parts are read."
        reads = [p for p in message["parts"] if p["type"] == "tool-read"]
        assert [p["input"] for p in reads] == [{"part": k} for k in range(1, TOTAL + 1)]
        summaries = [p for p in message["parts"] if p["type"] == SUMMARY_PART]
        assert len(summaries) == task.summaries == task.summary_requests >= 2
        assert [s["data"]["index"] for s in summaries] == list(range(1, len(summaries) + 1))
        assert task.refused == 0 and max(task.sizes) <= task.window
        stream = replayed(aws, run_id)
        assert stream is not None and stream["parts"] == message["parts"]  # resume replays exactly
