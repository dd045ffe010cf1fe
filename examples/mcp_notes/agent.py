"""An agent whose tools come from an MCP server: the notes server beside this file, over stdio.

    STEPLINE_AGENT=examples.mcp_notes.agent:agent STEPLINE_MODEL=openai:gpt-5.1 stepline dev

The server is started as a subprocess for each call (`StdioServer`); its tools reach the model as
`notes_list_notes`, `notes_read_note`, `notes_write_note` and `notes_delete_note`, and a delete
waits for a person's approval. The notes live in `NOTES_DIR` (default `notes/` in the working
directory). A stdio server is for `stepline dev`: a deployed agent talks to a remote server
(`HttpServer`), since a Lambda function has no servers to start.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from stepline import Agent
from stepline.tools.mcp import McpToolset, StdioServer

SERVER = Path(__file__).resolve().with_name("server.py")


def notes_agent(folder: Path) -> Agent:
    """The notes agent, keeping its notes in `folder`."""
    notes = StdioServer(
        name="notes",
        command=sys.executable,
        args=[str(SERVER), str(folder.resolve())],
        prefix="notes",
        approval={"delete_note": "user-approval"},
    )
    return Agent(
        name="notes",
        description="Keeps your notes (in an MCP server); asks before it deletes one.",
        instructions="You keep the user's notes with the notes tools. Be brief.",
        tools=[McpToolset([notes])],
    )


agent = notes_agent(Path(os.environ.get("NOTES_DIR", "notes")))
