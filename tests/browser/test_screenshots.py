"""The browser tests leave the tracked docs/screenshots/*.png alone unless asked (STEPLINE_SCREENSHOTS=1).

No browser here: the gate itself, with a stand-in page, and every screenshot in the browser tests
going through it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser import conftest


class RecordingPage:
    def __init__(self) -> None:
        self.paths: list[str] = []

    def screenshot(self, path: str) -> bytes:
        Path(path).write_bytes(b"png")
        self.paths.append(path)
        return b"png"


@pytest.mark.parametrize("value", [None, "", "0", "false", "yes"])
def test_no_screenshot_is_written_unless_asked(
    value: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if value is None:
        monkeypatch.delenv(conftest.SCREENSHOTS_ENV, raising=False)
    else:
        monkeypatch.setenv(conftest.SCREENSHOTS_ENV, value)
    monkeypatch.setattr(conftest, "SCREENSHOTS", tmp_path / "screenshots")
    page = RecordingPage()
    assert conftest.screenshot(page, "running") is None  # type: ignore[arg-type]
    assert page.paths == []
    assert not (tmp_path / "screenshots").exists()


def test_stepline_screenshots_1_writes_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(conftest.SCREENSHOTS_ENV, "1")
    monkeypatch.setattr(conftest, "SCREENSHOTS", tmp_path / "screenshots")
    page = RecordingPage()
    written = conftest.screenshot(page, "running")  # type: ignore[arg-type]
    expected = tmp_path / "screenshots" / "running.png"
    assert written == expected
    assert page.paths == [str(expected)] and expected.read_bytes() == b"png"


def test_every_screenshot_of_the_browser_tests_goes_through_the_gate() -> None:
    """A `page.screenshot(path=...)` anywhere else would write tracked files on every run again."""
    folder = Path(conftest.__file__).parent
    direct = [
        f"{path.name}:{number}"
        for path in sorted(folder.glob("*.py"))
        if path.name not in ("conftest.py", "test_screenshots.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\.screenshot\(\s*path\s*=|\bSCREENSHOTS\b", line) and "conftest." not in line
    ]
    assert direct == []
