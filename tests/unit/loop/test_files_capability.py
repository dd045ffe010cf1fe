"""A user file the model cannot take is a clear "capability not supported" error, never a silent drop."""

from __future__ import annotations

from typing import Any

from stepline.llm.base import ModelCapabilities
from stepline.llm.errors import UnsupportedCapabilityError
from stepline.llm.scripted import ScriptedModel
from stepline.loop.callbacks import Callbacks, ErrorEvent
from stepline.loop.stream_text import StreamTextResult, stream_text
from stepline.protocol import stream_parts as sp
from stepline.protocol.model_messages import ModelFilePart, UserModelMessage

from .support import collect, kinds, run, text_step


def _message(media_type: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this file?"},
            {"type": "file", "mediaType": media_type, "data": {"type": "data", "data": "AAAA"}},
        ],
    }


def _text_and_images_model() -> ScriptedModel:
    scripted = ScriptedModel.from_script([text_step("It is a cat.")], model_id="vision-1")
    scripted.capabilities = ModelCapabilities(input_media_types=("image/*",))
    return scripted


def _run(
    scripted: ScriptedModel, media_type: str
) -> tuple[StreamTextResult, list[sp.TextStreamPart], list[ErrorEvent]]:
    errors: list[ErrorEvent] = []

    async def scenario() -> tuple[StreamTextResult, list[sp.TextStreamPart]]:
        result = stream_text(
            model=scripted, messages=[_message(media_type)], callbacks=Callbacks(on_error=errors.append)
        )
        return result, await collect(result)

    result, parts = run(scenario)
    return result, parts, errors


def test_an_unsupported_file_fails_before_the_model_is_called() -> None:
    scripted = _text_and_images_model()
    result, parts, errors = _run(scripted, "application/pdf")
    assert scripted.calls == []
    (error_part,) = [p for p in parts if isinstance(p, sp.StreamError)]
    assert isinstance(error_part.error, UnsupportedCapabilityError)
    assert str(error_part.error) == ("capability not supported: scripted:vision-1 cannot take application/pdf files")
    outcome = result.outcome
    assert outcome is not None
    assert (outcome.kind, outcome.error_code, outcome.retryable) == ("failed", "unsupported_capability", False)
    assert outcome.error_text is not None and "capability not supported" in outcome.error_text
    assert len(errors) == 1 and "capability not supported" in str(errors[0].error)
    assert "finish" not in kinds(parts)


def test_a_supported_file_reaches_the_model() -> None:
    scripted = _text_and_images_model()
    result, _, errors = _run(scripted, "image/png")
    assert errors == [] and result.error is None
    message = scripted.calls[0].prompt[0]
    assert isinstance(message, UserModelMessage)
    (file_part,) = [p for p in message.content if isinstance(p, ModelFilePart)]
    assert file_part.media_type == "image/png"


def test_capability_patterns() -> None:
    caps = ModelCapabilities(input_media_types=("image/*", "application/pdf"))
    assert caps.accepts("image/jpeg") and caps.accepts("application/pdf")
    assert not caps.accepts("audio/wav") and not caps.accepts("application/zip")
    assert ModelCapabilities(input_media_types=("*/*",)).accepts("audio/wav")
    assert not ModelCapabilities(input_media_types=()).accepts("image/png")
