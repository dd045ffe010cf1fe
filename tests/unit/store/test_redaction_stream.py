"""Masking streamed deltas: a secret split across chunks is caught; the rest streams through."""

from __future__ import annotations

import json

import pytest

from stepline.protocol.chunks import (
    FinishStepChunk,
    TextDeltaChunk,
    TextEndChunk,
    ToolInputAvailableChunk,
    ToolInputDeltaChunk,
    UIMessageChunk,
)
from stepline.store.redaction import Redactor
from stepline.store.redaction_stream import DeltaMasker, JsonMasker, ShapeMasker

MASK = "*****"
KEY = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def shape_masked(text: str, size: int) -> str:
    masker = ShapeMasker(Redactor())
    return "".join(masker.feed(piece) for piece in pieces(text, size)) + masker.flush()


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 11, 64])
def test_a_secret_split_anywhere_is_masked_as_the_whole_text_would_be(size: int) -> None:
    text = f"My key is {KEY}, the AWS one AKIAABCDEFGHIJKLMNOP and Authorization: Bearer abcdefgh12345678 ok."
    assert shape_masked(text, size) == Redactor().redact_text(text)
    assert KEY not in shape_masked(text, size) and "abcdefgh12345678" not in shape_masked(text, size)


def test_plain_text_streams_at_once_and_only_a_possible_credential_waits() -> None:
    masker = ShapeMasker(Redactor())
    assert masker.feed("Hello wor") == "Hello wor"  # no credential begins with "wor": sent at once
    assert masker.feed("ld, s") == "ld, "  # "s" may begin "sk-…": held
    assert masker.feed("ky is blue, AK") == "sky is blue, "
    assert masker.feed("IAIOSFODNN7EXAMPLE.") == f"{MASK}."
    assert masker.feed("see x.sk") == "see x."  # a boundary inside a run of token characters
    assert masker.flush() == "sk"


def test_a_first_delta_that_cannot_begin_a_credential_is_not_held() -> None:
    # the leading edge of a part reaches the client at once (issue 16): "Hi" is never a key
    masker = DeltaMasker()
    out = masker.mask([TextDeltaChunk(id="t", delta="Hi")])
    assert [c.to_wire() for c in out] == [{"type": "text-delta", "id": "t", "delta": "Hi"}]


def json_masked(text: str, size: int) -> str:
    masker = JsonMasker(Redactor())
    return "".join(masker.feed(piece) for piece in pieces(text, size)) + masker.flush()


@pytest.mark.parametrize("size", [1, 2, 4, 9, 1000])
def test_sensitive_keys_values_are_masked_in_streamed_json_whatever_the_split(size: int) -> None:
    value = {
        "path": f"/srv/{KEY}",
        "password": 'hun"ter\\2',
        "nested": {"api_key": {"a": [1, {"b": "}"}]}, "token": 12345, "keep": [1, 2]},
        "list": [{"secret": None}, "x"],
        "note": "password",
    }
    text = json.dumps(value)
    out = json_masked(text, size)
    assert json.loads(out) == Redactor().redact(value)
    for leaked in (KEY, "hun", "12345", '"}"'):
        assert leaked not in out


def test_the_delta_masker_keeps_state_per_block_and_flushes_before_the_end() -> None:
    masker = DeltaMasker()
    chunks: list[UIMessageChunk] = [
        TextDeltaChunk(id="t", delta="key sk-ant-api03-abc"),
        ToolInputDeltaChunk(tool_call_id="c", input_text_delta='{"pass'),
        TextDeltaChunk(id="t", delta="defghijklmnop end"),
        ToolInputDeltaChunk(tool_call_id="c", input_text_delta='word": "hunter2"}'),
        ToolInputAvailableChunk(tool_call_id="c", tool_name="login", input={"password": MASK}),
        TextEndChunk(id="t"),
    ]
    out = masker.mask(chunks)
    text = "".join(c.delta for c in out if isinstance(c, TextDeltaChunk))
    tool = "".join(c.input_text_delta for c in out if isinstance(c, ToolInputDeltaChunk))
    assert text == f"key {MASK} end" and json.loads(tool) == {"password": MASK}
    assert [c.type for c in out][-2:] == ["tool-input-available", "text-end"]  # nothing was left held


def test_flush_sends_what_is_held_at_a_step_boundary_and_on_demand() -> None:
    masker = DeltaMasker()
    assert [c.to_wire() for c in masker.mask([TextDeltaChunk(id="t", delta="sk-")])] == []
    out = masker.mask([FinishStepChunk()])
    assert [c.to_wire() for c in out] == [{"type": "text-delta", "id": "t", "delta": "sk-"}, {"type": "finish-step"}]
    masker.mask([TextDeltaChunk(id="t", delta="Bear")])
    assert [c.to_wire() for c in masker.flush()] == [{"type": "text-delta", "id": "t", "delta": "Bear"}]
    assert masker.flush() == []


def test_a_long_run_of_token_characters_passes_through_in_linear_time() -> None:
    # a 100 KiB word in one delta (a file's content, base64): scanned once, never per character
    word = "p" * 100_000
    masker = ShapeMasker(Redactor())
    assert masker.feed(word) + masker.feed(" end") + masker.flush() == word + " end"
