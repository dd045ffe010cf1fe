"""The script book: a scripted model whose output depends only on the prompt.

Named for what it is: it does not think, it looks up a script. `ScriptedModel` counts its calls,
so it plays one run per process; a server, or AWS Lambda (where every step is a fresh process),
needs a model that answers the same prompt the same way in any process. A book is JSON:

    {
      "description": "…",
      "scripts": [{"name": "weather", "match": ["weather", "forecast"], "steps": [step, …]}, …],
      "fallback": {"steps": [step, …]}
    }

Each step is exactly a `ScriptedStep` (a list of stream parts, or `{"parts", "delayMs", "raise",
"after"}`). For each call:

- the script is the first whose `match` keywords include one that occurs (case-insensitively) in
  the text of the prompt's last user message; else the fallback;
- the step is the number of assistant messages in the prompt after that user message (a run's
  first call plays step 0; after a tool result, or an approval, step 1; and so on);
- past a script's last step the call fails with `ScriptExhaustedError`, never inventing output.

`{{last_user_text}}` in a text or reasoning delta is replaced by that user text; in a tool input
(`tool-input-delta`, `tool-call`) by the same text escaped for a JSON string, so write it inside
the quotes of a string value.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

from ..errors import StepLineError
from ..protocol._json import dumps, loads_strict
from ..protocol.model_messages import AssistantModelMessage, ModelMessage, ModelTextPart, UserModelMessage
from .base import ModelCallOptions, ModelCapabilities
from .scripted import ScriptedStep, ScriptExhaustedError, play_step
from .stream_parts import ModelStreamPart, V4ReasoningDelta, V4TextDelta, V4ToolCall, V4ToolInputDelta

__all__ = ["LAST_USER_TEXT", "Script", "ScriptBook", "ScriptBookError", "ScriptChoice"]

LAST_USER_TEXT: Final = "{{last_user_text}}"
"""Replaced by the text of the prompt's last user message."""


class ScriptBookError(StepLineError, ValueError):
    """A script book that is not well formed; the message names the place (`scripts[1].match`)."""


@dataclass(frozen=True, slots=True)
class Script:
    """One script of a book: the keywords that select it and its steps."""

    name: str
    match: tuple[str, ...]
    steps: tuple[ScriptedStep, ...]


@dataclass(frozen=True, slots=True)
class ScriptChoice:
    """What a prompt selects: the script, the step to play, and the user text it was chosen by."""

    script: Script
    step_index: int
    last_user_text: str


def _script(value: Any, where: str, *, fallback: bool = False) -> Script:
    if not isinstance(value, dict):
        raise ScriptBookError(f"{where}: a script is an object with 'steps'")
    script = cast(dict[str, Any], value)
    name = script.get("name", "fallback" if fallback else None)
    if not isinstance(name, str) or not name:
        raise ScriptBookError(f"{where}.name: a script needs a non-empty name")
    keywords: Any = script.get("match", [])
    if not isinstance(keywords, list) or not all(isinstance(k, str) and k.strip() for k in cast(list[Any], keywords)):
        raise ScriptBookError(f"{where}.match: expected a list of non-empty keywords")
    match = tuple(k.strip() for k in cast(list[str], keywords))
    if not fallback and not match:
        raise ScriptBookError(f"{where}.match: a script needs at least one keyword (only the fallback has none)")
    raw_steps: Any = script.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise ScriptBookError(f"{where}.steps: expected a non-empty list of steps")
    steps: list[ScriptedStep] = []
    for index, step in enumerate(cast(list[Any], raw_steps)):
        try:
            steps.append(ScriptedStep.parse(step))
        except ValueError as error:
            raise ScriptBookError(f"{where}.steps[{index}]: {error}") from None
    return Script(name=name, match=match, steps=tuple(steps))


def _last_user(prompt: Sequence[ModelMessage]) -> tuple[str, int]:
    """The last user message's text, and how many assistant messages follow it."""
    last = max((i for i, m in enumerate(prompt) if isinstance(m, UserModelMessage)), default=-1)
    text = ""
    if last >= 0:
        user = prompt[last]
        assert isinstance(user, UserModelMessage)
        text = "\n".join(p.text for p in user.content if isinstance(p, ModelTextPart))
    return text, sum(1 for m in prompt[last + 1 :] if isinstance(m, AssistantModelMessage))


def _substitute(part: ModelStreamPart, text: str, json_text: str) -> ModelStreamPart:
    if isinstance(part, V4TextDelta | V4ReasoningDelta | V4ToolInputDelta) and LAST_USER_TEXT in part.delta:
        value = json_text if isinstance(part, V4ToolInputDelta) else text
        return part.model_copy(update={"delta": part.delta.replace(LAST_USER_TEXT, value)})
    if isinstance(part, V4ToolCall) and LAST_USER_TEXT in part.input:
        return part.model_copy(update={"input": part.input.replace(LAST_USER_TEXT, json_text)})
    return part


def _missing_tools(script: str, missing: list[str], offered: list[str]) -> list[ModelStreamPart]:
    tools = ", ".join(offered) if offered else "none"
    text = (
        f"(Scripted demo book, not a language model.) The “{script}” script calls {', '.join(missing)}, "
        f"which this agent does not have (its tools: {tools}). The demo book plays scripts for "
        "stepline.tools.workspace; set STEPLINE_MODEL to a real model to try your own tools."
    )
    return list(
        ScriptedStep.parse(
            [
                {"type": "text-start", "id": "missing"},
                {"type": "text-delta", "id": "missing", "delta": text},
                {"type": "text-end", "id": "missing"},
                {"type": "finish", "finishReason": {"unified": "stop", "raw": "end_turn"}, "usage": {}},
            ]
        ).parts
    )


@dataclass(frozen=True)
class ScriptBook:
    """A `LanguageModel` that answers from a book of scripts, chosen by the prompt alone."""

    scripts: tuple[Script, ...] = field(repr=False)
    fallback: Script | None = field(default=None, repr=False)
    description: str = ""
    model_id: str = "script-book"
    provider: str = "scripted"
    capabilities: ModelCapabilities = field(
        default_factory=lambda: ModelCapabilities(input_media_types=("*/*",), reasoning_history=True)
    )

    @classmethod
    def from_book(cls, book: Any, *, model_id: str = "script-book") -> ScriptBook:
        """From parsed JSON (`{"description"?, "scripts": [...], "fallback"?}`).

        Raises:
            ScriptBookError: the book is malformed (the message names where).
        """
        if not isinstance(book, dict) or not isinstance(cast(dict[str, Any], book).get("scripts"), list):
            raise ScriptBookError("a script book is an object with a 'scripts' list")
        data = cast(dict[str, Any], book)
        scripts = tuple(_script(s, f"scripts[{i}]") for i, s in enumerate(cast(list[Any], data["scripts"])))
        fallback = _script(data["fallback"], "fallback", fallback=True) if data.get("fallback") is not None else None
        description = data.get("description", "")
        return cls(
            scripts=scripts,
            fallback=fallback,
            description=description if isinstance(description, str) else "",
            model_id=model_id,
        )

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptBook:
        """Load a book from a JSON file; the model id is the file's stem."""
        return cls.from_book(loads_strict(Path(path).read_text(encoding="utf-8")), model_id=Path(path).stem)

    def choose(self, prompt: Sequence[ModelMessage]) -> ScriptChoice:
        """The script and step `prompt` selects.

        Raises:
            ScriptExhaustedError: no script matches and there is no fallback.
        """
        text, step_index = _last_user(prompt)
        folded = text.casefold()
        for script in self.scripts:
            if any(keyword.casefold() in folded for keyword in script.match):
                return ScriptChoice(script, step_index, text)
        if self.fallback is None:
            raise ScriptExhaustedError(
                f"script book {self.model_id}: no script matches the last user message, and the book has no fallback"
            )
        return ScriptChoice(self.fallback, step_index, text)

    async def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        choice = self.choose(options.prompt)
        script = choice.script
        if choice.step_index >= len(script.steps):
            raise ScriptExhaustedError(
                f"script book {self.model_id}: script {script.name!r} has {len(script.steps)} steps, but the prompt "
                f"already has {choice.step_index} assistant messages after the last user message"
            )
        step = script.steps[choice.step_index]
        json_text = dumps(choice.last_user_text)[1:-1]
        parts = [_substitute(p, choice.last_user_text, json_text) for p in step.parts]
        offered = {t.name for t in options.tools}
        called = {p.tool_name for p in parts if isinstance(p, V4ToolCall) and not p.provider_executed}
        missing = sorted(called - offered)  # a provider-executed tool (web search) is the provider's own
        if missing:  # say so, instead of a call the loop answers with AI_NoSuchToolError
            parts = _missing_tools(script.name, missing, sorted(offered))
        async with aclosing(play_step(step, provider=self.provider, parts=parts)) as played:
            async for part in played:
                yield part
