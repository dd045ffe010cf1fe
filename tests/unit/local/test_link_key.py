"""The approval-link key of `stepline dev`: kept in the data folder, so a link outlives a restart."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from stepline.local.link_key import KEY_FILE, LinkKeyError, link_key
from stepline.runtime.approval_links import MIN_KEY_BYTES, ApprovalLinks
from stepline.store.records import ApprovalRecord


def approval() -> ApprovalRecord:
    return ApprovalRecord(
        user_id="u1",
        approval_id="ap-1",
        run_id="run-1",
        tool_call_id="call-1",
        tool_name="write_file",
        input={"path": "a.txt"},
        status="requested",
        requested_at=1,
        expires_at=10_000,
    )


def test_a_data_folders_key_is_made_once_and_read_on_every_later_start(tmp_path: Path) -> None:
    first = link_key(tmp_path)
    assert len(first) == MIN_KEY_BYTES
    assert link_key(tmp_path) == first
    assert stat.S_IMODE((tmp_path / KEY_FILE).stat().st_mode) == 0o600  # the owner's only
    assert [p.name for p in tmp_path.iterdir()] == [KEY_FILE]  # no draft left behind
    token = ApprovalLinks(first).token_for(approval())
    again = ApprovalLinks(link_key(tmp_path))
    claims, mac = again.claims(token)
    again.check(approval(), claims, mac, now=2)  # a link minted before the restart verifies after it


def test_without_a_folder_each_process_has_a_key_of_its_own() -> None:
    assert link_key(None) != link_key(None)


def test_a_key_file_that_is_no_key_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / KEY_FILE).write_bytes(b"")
    with pytest.raises(LinkKeyError, match=KEY_FILE):
        link_key(tmp_path)
