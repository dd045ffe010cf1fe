"""Offloading large JSON values: inline envelopes, blob pointers, item sizes and shrinking to fit."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from stepline.protocol._json import dumps
from stepline.store.blobs import BlobIntegrityError, BlobRef, MemoryBlobStore
from stepline.store.errors import NotFound
from stepline.store.payloads import ITEM_LIMIT, ItemTooLarge, Offloader, item_size, shrink_to_fit


def test_a_value_at_the_threshold_stays_inline_and_one_byte_more_goes_to_a_blob() -> None:
    blobs = MemoryBlobStore()
    offloader = Offloader(blobs, "u1", threshold=12)
    at_threshold = "x" * 10  # '"xxxxxxxxxx"' is 12 bytes of JSON
    assert len(dumps(at_threshold).encode()) == 12
    assert offloader.dump(at_threshold) == {"inline": at_threshold}
    assert blobs.list_keys("users/u1/") == []

    over = offloader.dump("x" * 11)
    assert set(over) == {"blob"}
    ref = BlobRef.model_validate(over["blob"])
    assert ref.key.startswith("users/u1/blobs/sha256/")
    assert ref.size == 13
    assert ref.media_type == "application/json"
    assert over["blob"]["mediaType"] == "application/json"  # camelCase on the wire
    assert blobs.list_keys("users/u1/") == [ref.key]


def test_the_threshold_counts_utf8_bytes_not_characters() -> None:
    offloader = Offloader(MemoryBlobStore(), "u1", threshold=8)
    assert set(offloader.dump("ééé")) == {"inline"}  # 6 bytes + quotes = 8
    assert set(offloader.dump("éééé")) == {"blob"}  # 10 bytes


def test_dump_writes_the_blob_before_returning_the_pointer_and_load_reads_it_back() -> None:
    blobs = MemoryBlobStore()
    offloader = Offloader(blobs, "u1", threshold=64)
    value: Any = {"rows": [{"id": i, "name": f"row {i}", "ok": i % 2 == 0, "none": None} for i in range(50)]}
    stored = offloader.dump(value)
    ref = BlobRef.model_validate(stored["blob"])
    assert blobs.get_object(ref.key) == dumps(value).encode()  # already there: blob first
    assert offloader.load(stored) == value
    assert offloader.load({"inline": [1, 2]}) == [1, 2]


def test_the_same_value_offloaded_twice_is_one_blob() -> None:
    blobs = MemoryBlobStore()
    offloader = Offloader(blobs, "u1", threshold=4)
    first, second = offloader.dump(["same"] * 10), offloader.dump(["same"] * 10)
    assert first == second
    assert len(blobs.list_keys("users/u1/")) == 1


def test_load_refuses_a_tampered_blob() -> None:
    blobs = MemoryBlobStore()
    offloader = Offloader(blobs, "u1", threshold=4)
    stored = offloader.dump("a long enough value")
    key = stored["blob"]["key"]
    tampered = dumps("a long enough VALUE").encode()
    assert len(tampered) == stored["blob"]["size"]
    blobs.put_object(key, tampered)
    with pytest.raises(BlobIntegrityError, match="sha256 mismatch"):
        offloader.load(stored)
    blobs.put_object(key, b'"short"')
    with pytest.raises(BlobIntegrityError, match="expected 21 bytes, read 7"):
        offloader.load(stored)


def test_load_never_follows_a_pointer_into_another_users_scope() -> None:
    blobs = MemoryBlobStore()
    theirs = Offloader(blobs, "u2", threshold=4).dump("their secret payload")
    with pytest.raises(NotFound):
        Offloader(blobs, "u1", threshold=4).load(theirs)


def test_load_rejects_what_is_not_an_envelope() -> None:
    offloader = Offloader(MemoryBlobStore(), "u1")
    not_envelopes: list[dict[str, Any]] = [{}, {"value": 1}, {"inline": 1, "blob": {}}]
    for stored in not_envelopes:
        with pytest.raises(ValueError, match="not a payload envelope"):
            offloader.load(stored)


def test_item_size_follows_the_dynamodb_rules() -> None:
    assert item_size({"name": "abc"}) == 4 + 3
    assert item_size({"é": "é"}) == 2 + 2
    assert item_size({"b": b"\x00\x01\x02"}) == 1 + 3
    assert item_size({"n": None, "t": True, "f": False}) == 3 * (1 + 1)
    # Numbers: one byte per two significant digits plus one; leading and trailing zeros are trimmed.
    assert item_size({"n": 7}) == 1 + 2
    assert item_size({"n": 12345}) == 1 + 4
    assert item_size({"n": 1_000_000}) == 1 + 2
    assert item_size({"n": Decimal("0.0012")}) == 1 + 2
    assert item_size({"n": -123.5}) == 1 + 3
    # A map or list: 3 bytes, plus each element's size and one byte per element.
    assert item_size({"l": []}) == 1 + 3
    assert item_size({"l": ["ab", 1]}) == 1 + 3 + (2 + 1) + (2 + 1)
    assert item_size({"m": {"k": "v"}}) == 1 + 3 + (1 + 1 + 1)
    assert item_size({"s": {"a", "bb"}}) == 1 + 3


def test_item_size_refuses_values_dynamodb_cannot_hold() -> None:
    with pytest.raises(TypeError, match="object"):
        item_size({"x": object()})


def _envelope_item(offloader: Offloader, **values: Any) -> dict[str, Any]:
    return {"pk": "U#u1#R#r1", "sk": "T#call_1", **{name: offloader.dump(value) for name, value in values.items()}}


def test_shrink_to_fit_moves_the_largest_candidates_first_and_only_as_many_as_needed() -> None:
    blobs = MemoryBlobStore()
    offloader = Offloader(blobs, "u1", threshold=10_000_000)
    item = _envelope_item(offloader, big="b" * 200_000, medium="m" * 100_000, small="s" * 1_000)
    assert item_size(item) > 300_000
    shrunk = shrink_to_fit(item, offloader, limit=150_000, candidates=["small", "medium", "big"])
    assert set(shrunk["big"]) == {"blob"}
    assert set(shrunk["medium"]) == {"inline"}
    assert set(shrunk["small"]) == {"inline"}
    assert item_size(shrunk) <= 150_000
    assert offloader.load(shrunk["big"]) == "b" * 200_000
    assert set(item["big"]) == {"inline"}  # the input is not changed


def test_shrink_to_fit_leaves_a_fitting_item_alone() -> None:
    blobs = MemoryBlobStore()
    offloader = Offloader(blobs, "u1")
    item = _envelope_item(offloader, output={"ok": True})
    assert shrink_to_fit(item, offloader, candidates=["output"]) == item
    assert blobs.list_keys("users/u1/") == []


def test_shrink_to_fit_fails_loudly_when_nothing_more_can_move() -> None:
    offloader = Offloader(MemoryBlobStore(), "u1", threshold=10_000_000)
    item = {**_envelope_item(offloader, output="o" * 10), "content": "c" * (ITEM_LIMIT + 1)}
    with pytest.raises(ItemTooLarge, match="every candidate offloaded"):
        shrink_to_fit(item, offloader, candidates=["output", "missing"])


def test_shrink_to_fit_requires_envelopes_in_candidate_attributes() -> None:
    offloader = Offloader(MemoryBlobStore(), "u1")
    with pytest.raises(ValueError, match='attribute "parts" must hold a payload envelope'):
        shrink_to_fit({"parts": [{"type": "text"}]}, offloader, candidates=["parts"])
