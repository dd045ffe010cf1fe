"""`stepline dev`'s defaults, read by its command line and by the server it starts."""

from __future__ import annotations

from typing import Literal

__all__ = ["DEFAULT_DATA_DIR", "DEFAULT_HOST", "DEFAULT_LOG_LEVEL", "DEFAULT_PORT", "LOG_LEVELS", "LogLevel"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_DATA_DIR = ".stepline"
"""The data folder, relative to the working directory."""
LogLevel = Literal["critical", "error", "warning", "info", "debug"]
LOG_LEVELS: tuple[LogLevel, ...] = ("critical", "error", "warning", "info", "debug")
DEFAULT_LOG_LEVEL: LogLevel = "warning"
