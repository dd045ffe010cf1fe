"""The Python blocks of the docs run: each page's blocks in order, in one namespace, as a reader pastes them.

Blocks are fragments of one story, so a page's later block may use what an earlier one defined; the
few names a page leaves to the reader (your own tool, your own input model) come from `PRELUDE`.
Running them catches a renamed parameter, a wrong import path, a setting an `Agent` refuses. Some
blocks get a closer look: the MCP server of docs/tools.md is started as a real stdio server and
called through the official SDK; the model object of docs/models.md must be what it says.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from stepline import Agent
from stepline.agent.toolsets import ToolList
from stepline.tools.mcp import McpToolset, StdioServer
from tests.support.mcp import invoke

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted((REPO / "docs").glob("*.md"))

PRELUDE = '''
from pydantic import BaseModel
from stepline import tool


class WeatherInput(BaseModel):
    city: str


@tool
def lookup_order(order_id: str) -> dict:
    """Look up one of the customer's orders."""
    return {"order_id": order_id}
'''


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), re.DOTALL | re.MULTILINE)


def run_page(page: Path) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": f"docs_{page.stem}"}  # not __main__: a server block does not serve
    exec(compile(PRELUDE, "prelude", "exec"), namespace)
    for n, block in enumerate(python_blocks(page), 1):
        try:
            exec(compile(block, f"{page.name} block {n}", "exec"), namespace)
        except Exception as error:
            pytest.fail(f"{page.name}, python block {n}: {type(error).__name__}: {error}\n{block}")
    return namespace


@pytest.mark.parametrize("page", [p for p in DOCS if python_blocks(p)], ids=lambda p: p.name)
def test_every_python_block_runs(page: Path) -> None:
    run_page(page)


def test_the_mcp_agent_block_lists_a_toolset_beside_a_function_tool() -> None:
    (block,) = [b for b in python_blocks(REPO / "docs/tools.md") if "McpToolset(" in b and "Agent(" in b]
    namespace: dict[str, Any] = {}
    exec(compile(PRELUDE + block, "tools.md", "exec"), namespace)
    agent = namespace["agent"]
    assert isinstance(agent, Agent) and isinstance(agent.tools, ToolList)  # live: listed at a step, not now


def test_the_mcp_server_block_serves_over_stdio_through_the_official_sdk(tmp_path: Path) -> None:
    (block,) = [b for b in python_blocks(REPO / "docs/tools.md") if "MCPServer(" in b]
    script = tmp_path / "server.py"
    script.write_text(block)
    server = StdioServer(name="notes", command=sys.executable, args=[str(script)], prefix="notes")
    tools = {t.name: t for t in McpToolset([server])}
    assert list(tools) == ["notes_write_note"] and tools["notes_write_note"].description == "Write a note."
    output = invoke(tools["notes_write_note"], {"title": "milk", "text": "Buy milk"})
    assert output == {"result": "saved milk"}


def test_the_model_object_block_builds_what_it_says() -> None:
    agent = run_page(REPO / "docs/models.md")["agent"]
    assert (agent.model.provider, agent.model.model_id) == ("openai", "qwen2.5")
    assert agent.model_spec("unused") == "openai:qwen2.5"
