"""Anthropic's server tools as tools an `Agent` lists: Anthropic runs them, Stepline never does.

Mirrors `anthropic.tools.*` of `@ai-sdk/anthropic` (4.0.105): each factory returns a loop `Tool`
whose `provider` is the `ProviderTool` the request converter sends (`server_tools`), so

    from stepline.llm.anthropic import tools as anthropic_tools

    Agent(
        model="anthropic:claude-sonnet-4-6",
        tools=[
            anthropic_tools.web_search(max_uses=3, allowed_domains=["docs.python.org"]),
            anthropic_tools.web_fetch(citations=True),
            anthropic_tools.code_execution(),
        ],
    )

gives the model Anthropic's web search, web fetch and code execution. Their calls stream back as
provider-executed tool parts (`providerExecuted: true`) with their results and `source` parts;
the loop never claims or runs them. Arguments are checked here (a `ValueError`), so a wrong one
fails when the agent is defined; a model without server tools fails before any request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from ...loop.tools import Tool
from ..base import ProviderTool
from .server_tools import SERVER_TOOLS, CodeExecutionArgs, UserLocation, WebFetchArgs, WebSearchArgs

__all__ = ["code_execution", "web_fetch", "web_search"]

WEB_SEARCH = "anthropic.web_search_20250305"
WEB_FETCH = "anthropic.web_fetch_20250910"
CODE_EXECUTION = "anthropic.code_execution_20250825"


def web_search(
    *,
    max_uses: int | None = None,
    allowed_domains: Sequence[str] | None = None,
    blocked_domains: Sequence[str] | None = None,
    user_location: UserLocation | dict[str, str] | None = None,
) -> Tool:
    """Anthropic's web search (`web_search_20250305`); results cite their sources.

    Args:
        max_uses: At most this many searches in one request.
        allowed_domains: Only results from these domains (not with `blocked_domains`).
        blocked_domains: Never results from these domains.
        user_location: Where the user roughly is: `UserLocation(city="Paris", country="FR")`.
    """
    location = (
        user_location.model_dump(mode="json", exclude_none=True)
        if isinstance(user_location, UserLocation)
        else user_location
    )
    return _tool(
        WEB_SEARCH,
        WebSearchArgs,
        maxUses=max_uses,
        allowedDomains=_listed(allowed_domains),
        blockedDomains=_listed(blocked_domains),
        userLocation=location,
    )


def web_fetch(
    *,
    max_uses: int | None = None,
    allowed_domains: Sequence[str] | None = None,
    blocked_domains: Sequence[str] | None = None,
    citations: bool | None = None,
    max_content_tokens: int | None = None,
) -> Tool:
    """Anthropic's web fetch (`web_fetch_20250910`, beta `web-fetch-2025-09-10`): a page or PDF by URL.

    Args:
        max_uses: At most this many fetches in one request.
        allowed_domains: Only these domains (not with `blocked_domains`).
        blocked_domains: Never these domains.
        citations: Let the model cite passages of the fetched documents (off unless set).
        max_content_tokens: Roughly how much of a page's text enters the context.
    """
    return _tool(
        WEB_FETCH,
        WebFetchArgs,
        maxUses=max_uses,
        allowedDomains=_listed(allowed_domains),
        blockedDomains=_listed(blocked_domains),
        citations=None if citations is None else {"enabled": citations},
        maxContentTokens=max_content_tokens,
    )


def code_execution() -> Tool:
    """Anthropic's code execution (`code_execution_20250825`, beta `code-execution-2025-08-25`).

    The model runs shell commands and edits files in a sandbox Anthropic hosts; its calls arrive as
    `code_execution` with `{"type": "bash_code_execution", "command": …}` or
    `{"type": "text_editor_code_execution", "command": "view" | "create" | "str_replace", …}`.
    """
    return _tool(CODE_EXECUTION, CodeExecutionArgs)


def _listed(domains: Sequence[str] | None) -> list[str] | None:
    if isinstance(domains, str):
        raise ValueError("domains are a list of names, not one string")
    return None if domains is None else list(domains)


def _tool(tool_id: str, model: type[BaseModel], **given: Any) -> Tool:
    """The tool, its arguments checked now (a pydantic `ValidationError` is a `ValueError`)."""
    args = model.model_validate({key: value for key, value in given.items() if value is not None})
    known = SERVER_TOOLS[tool_id]
    wire = args.model_dump(mode="json", by_alias=True, exclude_none=True)
    return Tool(name=known.name, provider=ProviderTool(id=tool_id, name=known.name, args=wire))
