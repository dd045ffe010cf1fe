"""What an MCP server entry says: where the server is, which of its tools the agent gets, and how.

The same models read a `STEPLINE_MCP_SERVERS` document (JSON, `{"servers": [...]}`) and are built
in Python by a toolset module. Header values are secrets: they are never in a repr, a log line, an
error message or a tool part; put them in an SSM parameter or a Secrets Manager secret on AWS
(`headers_parameter`) so the function's environment holds only the name.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

__all__ = ["HttpServer", "McpServer", "ServerList", "StdioServer", "exposed_name"]

ApprovalChoice = Literal["user-approval", "approved", "denied", "not-applicable"]

_NAME = r"^[A-Za-z0-9_-]{1,40}$"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class _Common(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(pattern=_NAME)
    """The server's name in logs and error messages (never its URL, which may carry a token)."""
    prefix: str | None = Field(default=None, pattern=_NAME)
    """Tool names become `{prefix}_{tool}`, so two servers (or a server and a function tool) cannot clash."""
    allowed_tools: frozenset[str] | None = Field(default=None, alias="allowedTools")
    """Only these of the server's tools (MCP names); None: all of them."""
    blocked_tools: frozenset[str] = Field(default=frozenset[str](), alias="blockedTools")
    """Never these (MCP names), even when allowed."""
    approval: dict[str, ApprovalChoice] = Field(default_factory=dict[str, ApprovalChoice])
    """Approval per tool (MCP name); `"*"` is the default for the server's other tools."""
    timeout_seconds: float = Field(default=30.0, gt=0, le=900, alias="timeoutSeconds")
    """One call, connection included; past it the call is a tool error the model reads."""

    def offers(self, tool: str) -> bool:
        """Whether the agent gets the server's tool `tool`."""
        allowed = self.allowed_tools is None or tool in self.allowed_tools
        return allowed and tool not in self.blocked_tools

    def approval_for(self, tool: str) -> ApprovalChoice | None:
        if tool in self.approval:
            return self.approval[tool]
        return self.approval.get("*")


class HttpServer(_Common):
    """A remote server over Streamable HTTP."""

    type: Literal["http"] = "http"
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, SecretStr] = Field(default_factory=dict[str, SecretStr])
    """Sent with every request (e.g. `Authorization`); values are masked in every repr."""
    headers_parameter: str | None = Field(default=None, alias="headersParameter", min_length=1)
    """An SSM parameter name (`/stepline/mcp/github`, SecureString) or `secretsmanager:<secret id>`
    whose value is a JSON object of headers; read once per process, merged over `headers`."""


class StdioServer(_Common):
    """A local server started as a subprocess (for `stepline dev`; a Lambda function has none)."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list[str])
    env: dict[str, SecretStr] | None = None
    """The subprocess's environment (None: the SDK's safe default set of variables)."""
    cwd: str | None = None


McpServer = Annotated[HttpServer | StdioServer, Field(discriminator="type")]


class ServerList(BaseModel):
    """A `STEPLINE_MCP_SERVERS` document."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    servers: list[McpServer] = Field(min_length=1)

    @field_validator("servers")
    @classmethod
    def _distinct(cls, servers: list[HttpServer | StdioServer]) -> list[HttpServer | StdioServer]:
        names = [s.name for s in servers]
        if len(set(names)) != len(names):
            raise ValueError("server names must be distinct")
        return servers


def exposed_name(server: HttpServer | StdioServer, tool: str) -> str:
    """The name the model sees: prefixed, and only characters every provider accepts in a tool name."""
    name = _UNSAFE.sub("_", tool)
    return (f"{server.prefix}_{name}" if server.prefix else name)[:64]
