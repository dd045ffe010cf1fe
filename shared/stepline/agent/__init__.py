"""Your agent: the `Agent` definition, the `@tool` decorator, and how a runtime loads them."""

from .definition import Agent, AgentDefinitionError
from .tools import ToolDefinitionError, tool

__all__ = ["Agent", "AgentDefinitionError", "ToolDefinitionError", "tool"]
