"""Toolsets that ship with Stepline. A toolset module exposes `TOOLS: list[Tool]` (or `tools()`)."""
