"""The conversation workspace: safe keys, file helpers, and moving large inline files out of messages."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from stepline.store.blobs import MemoryBlobStore
from stepline.store.errors import NotFound
from stepline.store.workspace import (
    extract_inline_files,
    list_files,
    parse_data_url,
    read_file,
    workspace_key,
    write_file,
)

ROOT = "users/u1/conversations/c1/workspace/"


def link(key: str) -> str:
    return f"/api/files/{key.removeprefix(ROOT)}"


def data_url(data: bytes, media_type: str = "application/pdf") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


@pytest.mark.parametrize(
    ("path", "normalised"),
    [("notes.md", "notes.md"), ("./a//b/./c.txt", "a/b/c.txt"), ("dir/", "dir"), ("报告/图.png", "报告/图.png")],
)
def test_workspace_keys_are_normalised_inside_the_conversation_scope(path: str, normalised: str) -> None:
    assert workspace_key("u1", "c1", path) == ROOT + normalised


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../other/file", "'..'"),
        ("a/../../b", "'..'"),
        ("/etc/passwd", "relative"),
        ("C:/Windows", "relative"),
        ("a\\..\\b", "backslashes"),
        ("evil\x00.txt", "NUL"),
        ("line\nbreak", "control"),
        ("", "names no file"),
        ("./", "names no file"),
    ],
)
def test_workspace_paths_that_could_escape_are_refused(path: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        workspace_key("u1", "c1", path)


def test_ids_with_separators_are_refused_before_they_become_key_material() -> None:
    with pytest.raises(ValueError, match="invalid user id"):
        workspace_key("u1/../u2", "c1", "a.txt")
    with pytest.raises(ValueError, match="invalid conversation id"):
        workspace_key("u1", "c 1", "a.txt")


def test_write_read_and_list_workspace_files() -> None:
    blobs = MemoryBlobStore()
    ref = write_file(blobs, "u1", "c1", "src/main.py", b"print(1)\n", "text/x-python")
    assert ref.key == ROOT + "src/main.py"
    assert ref.sha256 == hashlib.sha256(b"print(1)\n").hexdigest()
    write_file(blobs, "u1", "c1", "README.md", b"# hi")
    write_file(blobs, "u1", "c2", "other.md", b"not this conversation")
    write_file(blobs, "u1", "c1", "src/main.py", b"print(2)\n")  # overwrites
    assert read_file(blobs, "u1", "c1", "./src//main.py") == b"print(2)\n"
    assert list_files(blobs, "u1", "c1") == ["README.md", "src/main.py"]
    assert list_files(blobs, "u1", "c1", "src") == ["src/main.py"]
    assert list_files(blobs, "u1", "c1", "nothing-here") == []
    with pytest.raises(NotFound):
        read_file(blobs, "u1", "c1", "missing.txt")
    with pytest.raises(ValueError, match="'..'"):
        list_files(blobs, "u1", "c1", "..")


def test_parse_data_url_handles_base64_percent_encoding_and_missing_padding() -> None:
    assert parse_data_url("data:text/plain;base64,aGk=").data == b"hi"
    assert parse_data_url("data:text/plain;base64,aGk").data == b"hi"  # padding is optional (forgiving-base64)
    assert parse_data_url("data:text/plain;base64,aG\n k=").data == b"hi"
    parsed = parse_data_url("data:text/plain;charset=utf-8,a%20b%C3%A9")
    assert (parsed.media_type, parsed.data) == ("text/plain;charset=utf-8", "a bé".encode())
    assert parse_data_url("data:,x").media_type == "text/plain;charset=US-ASCII"


def _message(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "see attached"}, *parts]}


def test_large_inline_files_move_to_the_workspace_and_small_ones_stay() -> None:
    blobs = MemoryBlobStore()
    big, small = b"%PDF-" + bytes(range(256)) * 100, b"tiny"
    message = _message(
        {"type": "file", "mediaType": "application/pdf", "filename": "report.pdf", "url": data_url(big)},
        {"type": "file", "mediaType": "text/plain", "url": data_url(small, "text/plain")},
        {"type": "file", "mediaType": "image/png", "url": "https://example.com/a.png"},
    )
    original = repr(message)
    stored = extract_inline_files("u1", "c1", message, blobs, threshold=1024, link=link)

    digest = hashlib.sha256(big).hexdigest()
    assert stored["parts"][1] == {
        "type": "file",
        "mediaType": "application/pdf",
        "filename": "report.pdf",
        "url": f"/api/files/uploads/{digest}/report.pdf",
    }
    assert stored["parts"][2] == message["parts"][2]  # small: inline
    assert stored["parts"][3] == message["parts"][3]  # not a data URL
    assert stored["parts"][0] == {"type": "text", "text": "see attached"}
    assert blobs.get_object(f"{ROOT}uploads/{digest}/report.pdf") == big
    assert blobs.list_keys(ROOT) == [f"{ROOT}uploads/{digest}/report.pdf"]
    assert repr(message) == original  # the input is not changed


def test_the_threshold_is_on_decoded_bytes_and_inclusive() -> None:
    blobs = MemoryBlobStore()
    at, over = b"a" * 100, b"b" * 101
    message = _message({"type": "file", "mediaType": "text/plain", "url": data_url(at)})
    assert extract_inline_files("u1", "c1", message, blobs, threshold=100, link=link) == message
    message = _message({"type": "file", "mediaType": "text/plain", "url": data_url(over)})
    moved = extract_inline_files("u1", "c1", message, blobs, threshold=100, link=link)
    assert moved["parts"][1]["url"] == f"/api/files/uploads/{hashlib.sha256(over).hexdigest()}/file"


def test_the_same_upload_lands_on_the_same_key() -> None:
    blobs = MemoryBlobStore()
    part = {"type": "file", "mediaType": "image/png", "filename": "a.png", "url": data_url(b"x" * 50, "image/png")}
    first = extract_inline_files("u1", "c1", _message(part), blobs, threshold=10, link=link)
    second = extract_inline_files("u1", "c1", _message(part), blobs, threshold=10, link=link)
    assert first == second
    assert len(blobs.list_keys(ROOT)) == 1


@pytest.mark.parametrize(
    ("filename", "stored_as"),
    [("../../etc/passwd", "passwd"), ("C:\\Users\\me\\cv.docx", "cv.docx"), ("..", "file"), ("a\x00b.txt", "ab.txt")],
)
def test_client_filenames_become_a_single_safe_segment(filename: str, stored_as: str) -> None:
    blobs = MemoryBlobStore()
    part = {"type": "file", "mediaType": "text/plain", "filename": filename, "url": data_url(b"y" * 50)}
    stored = extract_inline_files("u1", "c1", _message(part), blobs, threshold=10, link=link)
    (key,) = blobs.list_keys(ROOT)
    assert key.endswith(f"/{stored_as}")
    assert key.startswith(ROOT + "uploads/")
    assert stored["parts"][1]["filename"] == filename  # the part keeps what the user sent


def test_files_inside_a_steering_message_are_extracted_too() -> None:
    blobs = MemoryBlobStore()
    inner = {"type": "file", "mediaType": "text/plain", "url": data_url(b"z" * 50)}
    message = _message({"type": "steering-message", "id": "s1", "parts": [{"type": "text", "text": "t"}, inner]})
    stored = extract_inline_files("u1", "c1", message, blobs, threshold=10, link=link)
    assert stored["parts"][1]["parts"][1]["url"].startswith("/api/files/uploads/")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("data:text/plain;base64,@@@@", "invalid base64"),
        ("data:text/plain;base64,a", "bad length"),
        ("data:text/plain;base64", "needs a ','"),
    ],
)
def test_an_invalid_data_url_names_the_part(url: str, reason: str) -> None:
    message = _message({"type": "file", "mediaType": "text/plain", "url": url})
    with pytest.raises(ValueError, match=rf"^parts\[1\]: invalid data URL: .*{reason}"):
        extract_inline_files("u1", "c1", message, MemoryBlobStore(), link=link)


def test_an_invalid_data_url_inside_a_steering_message_names_the_inner_part() -> None:
    inner = {"type": "file", "mediaType": "text/plain", "url": "data:text/plain;base64,!"}
    message = _message({"type": "steering-message", "id": "s1", "parts": [inner]})
    with pytest.raises(ValueError, match=r"^parts\[1\]\.parts\[0\]: invalid data URL"):
        extract_inline_files("u1", "c1", message, MemoryBlobStore(), link=link)
