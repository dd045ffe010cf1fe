"""`ContextPolicy`: how an agent keeps its model calls inside the context window.

    Agent(model="openai:gpt-5.1", context=ContextPolicy(threshold=0.8, keep_recent=4))

Before a model call whose prompt would take more than `threshold` of the input budget (the window
less the output reserve), the run takes a compaction step: the oldest part of the context is
summarized by a model call (`summary_model`, else the agent's own model) and replaced by the summary;
the newest `keep_recent` groups stay verbatim. A group is what must never be split: a user message,
or one step's assistant message with its tool results, approvals and reasoning.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .windows import ModelWindow, window_for

__all__ = ["DEFAULT_SUMMARY_INSTRUCTIONS", "HISTORY_WINDOWS", "ContextPolicy"]

HISTORY_WINDOWS = 4
"""With compaction on, a new turn carries up to this many limits' worth of the conversation."""

DEFAULT_SUMMARY_INSTRUCTIONS = (
    "You compact a long agent conversation. Summarize the transcript you are given so the agent can "
    "carry on without it: the user's goals and constraints, decisions made, facts and figures found "
    "(with tool names and the identifiers of outputs it may read again), what is done and what is "
    "still open. Keep an earlier summary's content. Write plain prose and lists; no preamble."
)


class ContextPolicy(BaseModel):
    """The agent's context management (every field has a working default).

    Attributes:
        threshold: Fraction of the input budget a prompt may fill before a compaction step runs.
        keep_recent: The newest groups (user messages, or steps with their tool results) kept verbatim.
        target: Fraction of the input budget the prompt is brought down to by a compaction.
        summary_model: `"provider:model-id"` or a `LanguageModel` that writes summaries (a cheaper
            one is fine); None uses the agent's model.
        summary_max_tokens: The longest summary asked for.
        summary_instructions: The summarizer's system prompt.
        context_window: Overrides the model table's window (tokens).
        output_reserve: Overrides the table's output reserve (tokens).
        compaction: False turns compaction off (the next turn's history still counts tokens).
        offload_above: Tool outputs longer than this many characters reach the model as a preview
            and a handle for the built-in `read_output` tool (the blob store keeps them whole);
            None sends every output whole.
        provider_count: Once the local count of the next request is over half the limit (it may
            under-count by up to half), ask the provider for the exact count when the model has one
            (`CountsTokens`: Anthropic's token counting endpoint), and decide on that: one count
            request before each such step. False decides on the local count alone.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    threshold: float = Field(default=0.8, gt=0, le=1)
    keep_recent: int = Field(default=4, ge=1)
    target: float = Field(default=0.5, gt=0, le=1)
    summary_model: Any = None
    summary_max_tokens: int = Field(default=2_000, ge=64)
    summary_instructions: str = DEFAULT_SUMMARY_INSTRUCTIONS
    context_window: int | None = Field(default=None, ge=1_024)
    output_reserve: int | None = Field(default=None, ge=0)
    compaction: bool = True
    offload_above: int | None = Field(default=20_000, ge=1_000)
    provider_count: bool = True

    def window(self, model_id: str) -> ModelWindow:
        """The model's window with this policy's overrides."""
        listed = window_for(model_id)
        return ModelWindow(
            context_window=self.context_window or listed.context_window,
            output_reserve=listed.output_reserve if self.output_reserve is None else self.output_reserve,
        )

    def limit(self, model_id: str) -> int:
        """Prompt tokens above which a compaction step runs first."""
        return int(self.window(model_id).input_budget * self.threshold)

    def history_budget(self, model_id: str) -> int:
        """Tokens of the conversation a new turn carries (the limit, several times over with compaction).

        With compaction on, more than fits: the turn's first step summarizes the excess (folding
        over several summarizer calls) instead of the excess being left out.
        """
        return self.limit(model_id) * (HISTORY_WINDOWS if self.compaction else 1)

    def goal(self, model_id: str) -> int:
        """Prompt tokens a compaction aims for (the summary included)."""
        return int(self.window(model_id).input_budget * min(self.target, self.threshold))
