"""The context steps of a durable run: big outputs out of the prompt, and compaction with its checkpoint.

Before each model step the worker first keeps big tool outputs out of the prompt (`offloaded`, with
`stepline.context.offload`; the `read_output` tool is offered then), then measures the next request
(instructions, tools, conversation) with the process's cached counts (near the limit, by the
provider's exact count where the model offers one). Over the agent's `ContextPolicy` limit,
`compaction_step` summarizes the oldest part (`stepline.context.compaction`), streams the summary
as a `data-context-summary` part (id `summary-<runId>-<n>`: a redo streams the same part again,
which replaces it) and the message's `metadata.context` (`compactions`, `lastCompaction`), then
saves a checkpoint (reason `compaction`) holding the compacted state. A crash before that
checkpoint redoes the compaction from the previous one; after it, the run goes on from the
compacted state and never summarizes the same part again.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import cast

from pydantic import JsonValue

from ..agent.definition import Agent
from ..context.compaction import compact, measure
from ..context.groups import summary_of
from ..context.offload import has_handles, offload_outputs
from ..context.read_output import read_output
from ..context.tokens import shared_tokens
from ..llm.base import CountsTokens, LanguageModel, ModelCallOptions
from ..llm.errors import ModelCallError
from ..loop.config import LoopConfig
from ..loop.messages import instruction_messages, prompt_messages
from ..loop.retry import failure_text
from ..loop.state import LoopState, StepOutcome
from ..loop.tool_order import ordered_tools
from ..protocol.chunks import DataChunk, MessageMetadataChunk
from ..store.history import SUMMARY_PART
from ..store.records import RunRecord
from .recorder import RunRecorder
from .services import Services

__all__ = ["compaction_step", "compactions", "offloaded"]

_LOG = logging.getLogger("stepline.runtime")


def _summarizer(services: Services, agent: Agent, model: LanguageModel) -> LanguageModel:
    chosen = agent.context.summary_model
    if chosen is None:
        return model
    if isinstance(chosen, str):
        return services.resolve(chosen, agent.timeouts.request)
    return cast(LanguageModel, chosen)


def offloaded(
    services: Services, agent: Agent, config: LoopConfig, run: RunRecord, state: LoopState
) -> tuple[LoopConfig, LoopState]:
    """The step's config and state with big tool outputs offloaded, and `read_output` offered if any is."""
    above = agent.context.offload_above
    if above is None or services.blobs is None:
        return config, state
    state = offload_outputs(state, blobs=services.blobs, user_id=run.user_id, above=above)
    if config.tool(read_output.name) is None and has_handles([*state.messages, *state.response_messages]):
        tools = [*config.tools, read_output]
        active = None if config.active_tools is None else [*config.active_tools, read_output.name]
        config = dataclasses.replace(config, tools=tools, active_tools=active)
    return config, state


async def compaction_step(
    services: Services, agent: Agent, config: LoopConfig, run: RunRecord, state: LoopState, recorder: RunRecorder
) -> LoopState | StepOutcome:
    """The state the next step starts from: compacted and checkpointed when it had to be.

    A summarizer failure is the step's failure (a `StepOutcome`, retried as a model error is).
    """
    policy = agent.context
    if not policy.compaction:
        return state
    tokens = shared_tokens()
    tools = [t.definition() for t in ordered_tools(config)]
    fixed = measure(tokens, instruction_messages(config.instructions), tools)
    history = prompt_messages([*state.messages, *state.response_messages])
    size = fixed + tokens.messages(history)
    limit = policy.limit(config.model.model_id)
    if policy.provider_count and size > limit // 2 and isinstance(config.model, CountsTokens):
        prompt = [*instruction_messages(config.instructions), *history]
        size = await _provider_count(config.model, ModelCallOptions(prompt=prompt, tools=tools), size, run)
    if size <= limit:
        return state
    try:
        done = await compact(
            state,
            policy=policy,
            model_id=config.model.model_id,
            summarizer=_summarizer(services, agent, config.model),
            tokens=tokens,
            fixed_tokens=fixed,
        )
    except ModelCallError as error:
        return StepOutcome(
            "failed",
            state,
            finish_reason="error",
            error_text=f"compaction failed: {failure_text(error)}",
            error_code=error.kind,
            retryable=error.retryable,
        )
    if done is None:
        _LOG.warning("run %s: %d tokens over the limit and nothing left to summarize", run.run_id, size)
        return state
    index = done.marker["index"]
    data: dict[str, JsonValue] = {**done.marker, "summary": done.summary}
    metadata: dict[str, JsonValue] = {"context": {"compactions": index, "lastCompaction": dict(done.marker)}}
    recorder.write(
        [
            DataChunk(type=SUMMARY_PART, id=f"summary-{run.run_id}-{index}", data=data),
            MessageMetadataChunk(message_metadata=metadata),
        ]
    )
    recorder.flush()
    now = services.clock()
    services.store.save_snapshot(run.user_id, run.run_id, recorder.snapshot(), now=now)
    services.store.save_checkpoint(
        run.user_id, run.run_id, state=done.state.model_dump(mode="json", by_alias=True), reason="compaction", now=now
    )
    _LOG.info("run %s: compaction %s, %s -> %s tokens", run.run_id, index, size, done.marker["tokensAfter"])
    return done.state


async def _provider_count(model: CountsTokens, options: ModelCallOptions, estimate: int, run: RunRecord) -> int:
    """The provider's count of the next request; the local one when the provider cannot give it."""
    try:
        return await model.count_tokens(options)
    except ModelCallError as error:
        _LOG.warning("run %s: the provider's token count failed (%s); using the local count", run.run_id, error)
        return estimate


def compactions(state: LoopState) -> int:
    """How many compactions the state's context went through (its summary's index, else 0)."""
    marker = summary_of(state.messages[0]) if state.messages else None
    return int(marker["index"]) if marker else 0
