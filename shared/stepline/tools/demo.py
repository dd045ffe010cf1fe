"""The demo toolset: deterministic tools that need no network, for the scripted demo and tests.

- `get_weather(city)`: a made-up but stable forecast (the same city always gets the same weather).
- `delete_file(path)`: needs approval; it only pretends (nothing on disk is touched).
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, Field

from ..loop.tools import Tool, tool

__all__ = ["TOOLS", "TOOL_APPROVAL"]

_SKIES = ("clear", "cloudy", "light rain", "windy", "foggy")


class WeatherInput(BaseModel):
    """Input of `get_weather`."""

    city: str = Field(min_length=1, description="City name, e.g. Paris")


class DeleteInput(BaseModel):
    """Input of `delete_file`."""

    path: str = Field(min_length=1, description="Path of the file to delete")


def get_weather(request: WeatherInput) -> dict[str, object]:
    """A stable, made-up forecast derived from the city name."""
    seed = hashlib.sha256(request.city.strip().lower().encode()).digest()
    return {"city": request.city, "temperatureC": 5 + seed[0] % 25, "sky": _SKIES[seed[1] % len(_SKIES)]}


def delete_file(request: DeleteInput) -> dict[str, object]:
    """Pretend to delete a file (the demo never touches the disk)."""
    return {"path": request.path, "deleted": True, "note": "demo tool: nothing was deleted"}


TOOLS: list[Tool] = [
    tool("get_weather", "Current weather for a city.", WeatherInput, get_weather),
    tool("delete_file", "Delete a file. Needs the user's approval.", DeleteInput, delete_file),
]
TOOL_APPROVAL = {"delete_file": "user-approval"}
"""The approval policy this toolset asks for."""
