"""Anthropic's server tools in a request: a `ProviderTool` → its entry in `tools`, and the beta it needs.

After `prepareTools` of `@ai-sdk/anthropic` (`src/anthropic-prepare-tools.ts`, 4.0.105) for the
server tools Stepline offers: web search (`web_search_20250305`), web fetch (`web_fetch_20250910`,
beta `web-fetch-2025-09-10`) and code execution (`code_execution_20250825`, beta
`code-execution-2025-08-25`). Their `args` are the SDK's camelCase options; the API takes the
snake_case spelling (`maxUses` → `max_uses`), as `anthropic.types.WebSearchTool20250305Param`
and its siblings type them.

A provider tool the Messages API cannot run — another provider's (`openai.web_search`), an
Anthropic tool Stepline does not map, or any server tool on a model without them (the Claude 3
models before 3.5 Haiku / 3.7 Sonnet) — raises `UnsupportedCapabilityError` before any request.
Arguments of the wrong shape are a non-retryable `ModelCallError` naming the path, never the value.

Pure: pydantic, the standard library and `stepline` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from ..base import ProviderTool
from ..errors import ModelCallError, UnsupportedCapabilityError

__all__ = [
    "SERVER_TOOLS",
    "CodeExecutionArgs",
    "ServerTool",
    "UserLocation",
    "WebFetchArgs",
    "WebSearchArgs",
    "server_tool_block",
]


class _Args(BaseModel):
    """camelCase keys (the SDK's), nothing unknown: a misspelt option must not be silently dropped."""

    model_config: ClassVar[ConfigDict] = ConfigDict(alias_generator=to_camel, extra="forbid", frozen=True)

    def wire(self) -> dict[str, JsonValue]:
        """The API's snake_case fields, unset ones left out."""
        return self.model_dump(mode="json", exclude_none=True)


class UserLocation(_Args):
    """An approximate location for more relevant search results (`UserLocationParam`)."""

    type: Literal["approximate"] = "approximate"
    city: str | None = None
    region: str | None = None
    country: str | None = None
    timezone: str | None = None
    """An IANA time zone id, e.g. `Europe/Paris`."""


class _DomainArgs(_Args):
    max_uses: int | None = None
    allowed_domains: list[str] | None = None
    blocked_domains: list[str] | None = None

    @model_validator(mode="after")
    def _one_domain_list(self) -> _DomainArgs:
        if self.allowed_domains is not None and self.blocked_domains is not None:
            raise ValueError("allowedDomains and blockedDomains cannot be used together")
        return self


class WebSearchArgs(_DomainArgs):
    """`web_search_20250305`: maxUses, allowedDomains or blockedDomains, userLocation."""

    user_location: UserLocation | None = None


class Citations(_Args):
    enabled: bool


class WebFetchArgs(_DomainArgs):
    """`web_fetch_20250910`: maxUses, allowedDomains or blockedDomains, citations, maxContentTokens."""

    citations: Citations | None = None
    max_content_tokens: int | None = None


class CodeExecutionArgs(_Args):
    """Code execution has no options."""


@dataclass(frozen=True, slots=True)
class ServerTool:
    """One server tool version: its API type and name, its argument model, and its beta (if any)."""

    type: str
    name: str
    args: type[_Args]
    beta: str | None = None

    @property
    def id(self) -> str:
        return f"anthropic.{self.type}"


SERVER_TOOLS: dict[str, ServerTool] = {
    tool.id: tool
    for tool in (
        ServerTool("web_search_20250305", "web_search", WebSearchArgs),
        ServerTool("web_fetch_20250910", "web_fetch", WebFetchArgs, beta="web-fetch-2025-09-10"),
        ServerTool("code_execution_20250825", "code_execution", CodeExecutionArgs, beta="code-execution-2025-08-25"),
    )
}
"""The server tools Stepline sends, by `ProviderTool.id`."""


def server_tool_block(tool: ProviderTool, *, model_id: str, supported: bool) -> tuple[dict[str, JsonValue], str | None]:
    """The `tools` entry for `tool` and the beta it needs; raises before any request when it cannot be sent.

    `supported` says whether the model runs server tools at all (`ModelTraits.server_tools`).
    """
    known = SERVER_TOOLS.get(tool.id)
    if known is None:
        offered = ", ".join(SERVER_TOOLS)
        whose = "" if tool.provider == "anthropic" else f" is {tool.provider}'s and"
        raise UnsupportedCapabilityError(
            f"the provider tool {tool.id} ({tool.name}){whose} cannot be sent to the Anthropic Messages API "
            f"for {model_id}; its server tools are {offered}",
            provider="anthropic",
            model_id=model_id,
        )
    if not supported:
        raise UnsupportedCapabilityError(
            f"{model_id} has no server tools; {tool.id} needs Claude 3.5 Haiku, 3.7 Sonnet or a Claude 4 model",
            provider="anthropic",
            model_id=model_id,
        )
    if tool.name != known.name:
        raise ModelCallError(
            f"the provider tool {tool.id} must be named {known.name!r} (got {tool.name!r})",
            kind="bad_request",
            provider="anthropic",
        )
    try:
        args = known.args.model_validate(tool.args)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join([tool.id, *(str(step) for step in problem['loc'])])}: {problem['msg']}"
            for problem in error.errors(include_input=False, include_url=False)
        )
        message = f"invalid {tool.id} arguments: {problems}"
        raise ModelCallError(message, kind="bad_request", provider="anthropic") from None
    return {"type": known.type, "name": known.name, **args.wire()}, known.beta
