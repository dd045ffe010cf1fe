"""Big tool outputs kept out of the prompt: the blob store holds them, the model reads them on demand.

Before each step, a tool result whose text (a string, or the JSON of any other output) is longer than
the policy's `offload_above` characters is stored whole in the blob store (content-addressed under
the user's `outputs/`, so a redo stores the same object) and replaced *in the prompt* by its head and
tail, its size, and a handle: the SHA-256 of the text. The built-in `read_output` tool
(`stepline.context.read_output`) reads any range of it, or searches it. The stream, the stored
message and the UI keep the full output: only what the model is sent changes, and the checkpoint's
record of each step but the last (`LoopState.steps`: what `prepare_step`, stop conditions and
`on_finish` see of earlier steps) holds the same preview, so a checkpoint grows by a preview a step,
not by each output twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..loop.state import LoopState, StepRecord, ToolResultRecord
from ..protocol._json import dumps
from ..protocol.model_messages import ModelMessage, TextOutput, ToolModelMessage, ToolResultPart
from ..store.blobs import BlobStore, sha256_hex

__all__ = ["OUTPUTS_KIND", "PREVIEW_HEAD", "PREVIEW_TAIL", "has_handles", "offload_outputs", "preview"]

OUTPUTS_KIND = "outputs"
PREVIEW_HEAD = 1_500
PREVIEW_TAIL = 500
_MARK = "[stepline output "


def preview(text: str, handle: str) -> str:
    """What the model sees of an offloaded output."""
    return (
        f"{_MARK}{handle}: {len(text)} characters, the first {PREVIEW_HEAD} and the last {PREVIEW_TAIL} "
        "shown; read any part with read_output(handle, offset, length), or find text in it with "
        f"read_output(handle, search=...)]\n{text[:PREVIEW_HEAD]}\n… [{len(text) - PREVIEW_HEAD - PREVIEW_TAIL} "
        f"characters not shown] …\n{text[-PREVIEW_TAIL:]}"
    )


def _text_of(part: ToolResultPart) -> str | None:
    output: Any = part.output
    kind = getattr(output, "type", None)
    if kind == "text":
        return str(output.value)
    if kind == "json":
        return dumps(output.value)
    return None  # errors, denials and content outputs are left as they are


def offload_outputs(state: LoopState, *, blobs: BlobStore, user_id: str, above: int) -> LoopState:
    """The state with every tool output over `above` characters offloaded (the same state when none is)."""
    changed = False

    def convert(message: ModelMessage) -> ModelMessage:
        nonlocal changed
        if not isinstance(message, ToolModelMessage):
            return message
        parts: list[Any] = []
        for part in message.content:
            text = _text_of(part) if isinstance(part, ToolResultPart) else None
            if text is None or len(text) <= above or text.startswith(_MARK):
                parts.append(part)
                continue
            parts.append(part.model_copy(update={"output": TextOutput(value=stored(text))}))
        return message.model_copy(update={"content": parts}) if parts != list(message.content) else message

    previews: dict[str, str] = {}  # one output is in the prompt and twice in its step's record: one put

    def stored(text: str) -> str:
        nonlocal changed
        changed = True
        if text not in previews:
            data = text.encode("utf-8")
            blobs.put(user_id, data, media_type="text/plain; charset=utf-8", kind=OUTPUTS_KIND)
            previews[text] = preview(text, sha256_hex(data))
        return previews[text]

    def convert_step(step: StepRecord) -> StepRecord:
        results: list[ToolResultRecord] = []
        for result in step.tool_results:
            output = result.output
            text = output if isinstance(output, str) else None if output is None else dumps(output)
            big = text is not None and len(text) > above and not text.startswith(_MARK)
            results.append(result.model_copy(update={"output": stored(text)}) if big and text else result)
        responses = [convert(m) for m in step.response_messages]
        if results == step.tool_results and responses == step.response_messages:
            return step
        return step.model_copy(update={"tool_results": results, "response_messages": responses})

    messages = [convert(m) for m in state.messages]
    responses = [convert(m) for m in state.response_messages]
    # The steps' own copies too, but the last one's (its results may still be added to and saved as the
    # tool ledger's outputs): a checkpoint carries every step, so it would grow by each output twice a step.
    steps = [*(convert_step(step) for step in state.steps[:-1]), *state.steps[-1:]]
    if not changed:
        return state
    return state.model_copy(update={"messages": messages, "response_messages": responses, "steps": steps})


def has_handles(messages: Sequence[ModelMessage]) -> bool:
    """Whether any tool result in `messages` is an offloaded output's preview."""
    return any(
        isinstance(p, ToolResultPart) and (_text_of(p) or "").startswith(_MARK)
        for m in messages
        if isinstance(m, ToolModelMessage)
        for p in m.content
    )
