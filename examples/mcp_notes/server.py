"""A tiny MCP server over stdio: notes kept as Markdown files in one folder.

    python examples/mcp_notes/server.py NOTES_FOLDER

Written on the official `mcp` SDK, 2.x: the server class is `MCPServer`, from `mcp.server` (it was
FastMCP in 1.x; `mcp.server.fastmcp` no longer exists). Each tool call of a Stepline agent starts
this process anew (see docs/tools.md), so everything it knows is in the folder.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

Title = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9 _-]{0,63}$", description="The note's title")]

server = MCPServer("notes", log_level="WARNING")
folder = Path(sys.argv[1] if len(sys.argv) > 1 else "notes")


def _path(title: str) -> Path:
    return folder / f"{title}.md"


@server.tool()
def list_notes() -> list[str]:
    """The titles of every note, sorted."""
    return sorted(path.stem for path in folder.glob("*.md"))


@server.tool()
def read_note(title: Title) -> str:
    """Read one note."""
    if not _path(title).is_file():
        raise ToolError(f"there is no note titled {title!r}")
    return _path(title).read_text(encoding="utf-8")


@server.tool()
def write_note(title: Title, text: Annotated[str, Field(description="The note, in Markdown")]) -> str:
    """Write a note (a new one, or over the note of the same title)."""
    folder.mkdir(parents=True, exist_ok=True)
    _path(title).write_text(text, encoding="utf-8")
    return f"saved {title}"


@server.tool()
def delete_note(title: Title) -> str:
    """Delete a note for good."""
    if not _path(title).is_file():
        raise ToolError(f"there is no note titled {title!r}")
    _path(title).unlink()
    return f"deleted {title}"


if __name__ == "__main__":
    server.run("stdio")
