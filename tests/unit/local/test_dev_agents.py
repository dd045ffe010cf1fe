"""`stepline dev` serves the agents of STEPLINE_AGENT and fails before serving when it cannot."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepline.local.dev import DevConfig, DevConfigError, banner, dev_agents
from tests.support.server import config, running

MODULE = """
from stepline import Agent, tool

@tool(approval="user-approval")
def launch(target: str) -> str:
    '''Launch.'''
    return target

@tool
def ping() -> str:
    '''Ping.'''
    return "pong"

agent = Agent(name="ops", tools=[ping, launch])
remote = Agent(name="remote", model="openai:gpt-5.1")
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "ops_agent.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)  # stepline dev imports from the working directory
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return tmp_path


def test_an_agent_that_cannot_be_imported_fails_naming_the_variable(project: Path) -> None:
    with pytest.raises(DevConfigError, match="STEPLINE_AGENT=ops_agentx:agent: no module named ops_agentx"):
        dev_agents(DevConfig.from_env({"STEPLINE_AGENT": "ops_agentx:agent"}))


def test_a_missing_api_key_fails_before_serving_naming_the_variable(project: Path) -> None:
    with pytest.raises(DevConfigError, match="agent remote uses the model openai:gpt-5.1: set OPENAI_API_KEY"):
        dev_agents(DevConfig.from_env({"STEPLINE_AGENT": "ops_agent:remote"}))


def test_the_banner_lists_the_agent_and_its_tools(project: Path) -> None:
    with running(config(STEPLINE_AGENT="ops_agent:agent")) as server:
        text = banner(server.server, server.url)
    assert "agents   ops_agent:agent" in text
    assert "ops: scripted:demo-book; tools: ping, launch (approval)" in text
