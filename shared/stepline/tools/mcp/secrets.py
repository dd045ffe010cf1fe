"""A remote server's headers: the configured ones, merged with those of an SSM parameter or a secret.

The parameter (a SecureString) or secret holds a JSON object of header names to values. It is read
once per process, on the server's first listing or call, through boto3; a failure names the
parameter and the AWS error code, never a value.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, cast

from ...protocol._json import loads_strict
from .config import HttpServer
from .connection import McpToolError

__all__ = ["ParameterHeaders"]

_SECRETS_MANAGER = "secretsmanager:"


def _client(service: str) -> Any:
    import boto3

    return cast(Any, boto3.client(service))  # pyright: ignore[reportUnknownMemberType]


class ParameterHeaders:
    """`HeaderSource` reading `headers_parameter` once per process (`client(name)` makes boto3 clients)."""

    def __init__(self, client: Callable[[str], Any] = _client) -> None:
        self._client = client
        self._read: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()

    def __call__(self, server: HttpServer) -> Mapping[str, str]:
        headers = {name: value.get_secret_value() for name, value in server.headers.items()}
        if server.headers_parameter is not None:
            headers.update(self._parameter(server.headers_parameter))
        return headers

    def _parameter(self, name: str) -> dict[str, str]:
        with self._lock:
            if name not in self._read:
                self._read[name] = _parse(name, self._fetch(name))
            return self._read[name]

    def _fetch(self, name: str) -> str:
        try:
            if name.startswith(_SECRETS_MANAGER):
                secret = self._client("secretsmanager").get_secret_value(SecretId=name.removeprefix(_SECRETS_MANAGER))
                return str(secret["SecretString"])
            return str(self._client("ssm").get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"])
        except Exception as error:  # the value is never in the message
            code = getattr(error, "response", {}).get("Error", {}).get("Code", type(error).__name__)
            raise McpToolError(f"cannot read the MCP headers parameter {name} ({code})") from None


def _parse(name: str, text: str) -> dict[str, str]:
    try:
        value: Any = loads_strict(text)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in cast(dict[str, Any], value).values()):
        raise McpToolError(f"the MCP headers parameter {name} is not a JSON object of header names to strings")
    return cast(dict[str, str], value)
