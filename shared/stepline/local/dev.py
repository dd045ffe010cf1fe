"""`stepline dev`: the whole of Stepline on this machine, one command, no AWS account.

The same FastAPI app as on AWS, served by uvicorn, over the local backend (`stepline.local.backend`:
DynamoDB, S3 and the Step Functions state machine of template.yaml on moto, the worker functions
in process). Everything lives in memory and is gone when the server stops.

Configuration is read from the environment:

    STEPLINE_MODEL       openai:<model> | anthropic:<model> | scripted:<file.json>
                         (default: the scripted demo book; the providers' own variables, such as
                         OPENAI_API_KEY and ANTHROPIC_API_KEY, give the keys)
    STEPLINE_TOOLS       a module exposing TOOLS (default: stepline.tools.workspace;
                         stepline.tools.mcp: the MCP servers of STEPLINE_MCP_SERVERS, docs/tools.md)
    STEPLINE_DEV_TOKENS  token:user,token2:user2 (default: one local user, no token needed)
    STEPLINE_APPROVAL_TIMEOUT_SECONDS   how long an approval or question waits (default: 1 day)
    STEPLINE_CORS_ORIGINS  other browser origins that may call the API, comma-separated, such as
                         http://localhost:3000 for a front end of your own (default: none)

`--aws` serves the API over a deployed stack instead (its tables, bucket and state machine, named
by the same `STEPLINE_*` variables the Lambda functions read; see infra/README.md).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from ..api.app import ApiOptions, create_app
from ..api.cors import parse_origins
from ..api.identity import DevTokens, Identity, parse_dev_tokens
from ..errors import StepLineError
from ..llm.registry import DEMO_BOOK, resolve_model
from ..runtime.services import Services
from ..tools import load_toolset
from .backend import LocalBackend, local_backend
from .links import LocalLinkBlobStore, mount_links
from .web import default_dist, describe, mount_web, start_build

__all__ = ["DevConfig", "DevServer", "dev_server", "serve"]

DEFAULT_TOOLS = "stepline.tools.workspace"


class DevConfigError(StepLineError):
    """A Stepline variable of the environment is not usable."""


@dataclass(frozen=True, slots=True)
class DevConfig:
    """What the dev server runs, from the environment."""

    model: str
    model_is_demo: bool
    tools: str
    tokens: dict[str, str]
    approval_timeout_seconds: int
    cors_origins: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DevConfig:
        model = env.get("STEPLINE_MODEL", "").strip()
        try:
            tokens = parse_dev_tokens(env.get("STEPLINE_DEV_TOKENS", ""))
        except ValueError as error:
            raise DevConfigError(str(error)) from None
        try:
            origins = parse_origins(env.get("STEPLINE_CORS_ORIGINS", ""))
        except ValueError as error:
            raise DevConfigError(f"STEPLINE_CORS_ORIGINS: {error}") from None
        timeout = env.get("STEPLINE_APPROVAL_TIMEOUT_SECONDS", "86400")
        if not timeout.isdigit() or int(timeout) < 1:
            raise DevConfigError("STEPLINE_APPROVAL_TIMEOUT_SECONDS must be a whole number of seconds >= 1")
        return cls(
            model=model or f"scripted:{DEMO_BOOK}",
            model_is_demo=not model,
            tools=env.get("STEPLINE_TOOLS", "").strip() or DEFAULT_TOOLS,
            tokens=tokens,
            approval_timeout_seconds=int(timeout),
            cors_origins=origins,
        )


@dataclass
class DevServer:
    """A built dev server: the app, its backend and who its users are."""

    app: Any
    backend: LocalBackend
    identity: Identity
    config: DevConfig


@contextmanager
def dev_server(config: DevConfig, *, api: ApiOptions = ApiOptions()) -> Generator[DevServer]:  # noqa: B008 - frozen
    """The app over the local backend (moto lives for the duration of the context)."""
    model = resolve_model(config.model)
    tools, approval = load_toolset(config.tools)

    def make_services(**backend: Any) -> Services:
        return Services(model=model, tools=tools, tool_approval=approval or None, client="stepline-dev", **backend)

    with local_backend(make_services, approval_timeout_seconds=config.approval_timeout_seconds) as backend:
        identity = DevTokens(config.tokens)
        app = create_app(backend.services, identity, dataclasses.replace(api, cors_origins=config.cors_origins))
        blobs = backend.services.blobs
        assert isinstance(blobs, LocalLinkBlobStore)
        mount_links(app, blobs)
        mount_web(app, default_dist(os.environ))
        yield DevServer(app, backend, identity, config)


def banner(server: DevServer, url: str) -> str:
    """What the dev server prints when it is up: where, which model, what storage, how to change them."""
    config = server.config
    model = (
        "scripted demo book (no API key needed; it follows a script, it does not think)"
        if config.model_is_demo
        else config.model
    )
    lines = [
        f"Stepline is running at {url}  (API docs: {url}/api/docs)",
        f"  model    {model}",
        "           change it: STEPLINE_MODEL=openai:<model> (OPENAI_API_KEY) or anthropic:<model> (ANTHROPIC_API_KEY)",
        f"  tools    {config.tools}  (STEPLINE_TOOLS=package.module)",
        "  storage  embedded: DynamoDB, S3 and Step Functions (template.yaml's state machine) on moto, in memory;",
        "           everything is gone when the server stops (`stepline dev --aws` uses a deployed stack)",
        f"  users    {server.identity.describe()}",
        f"  origins  {_origins(config.cors_origins)}",
        f"  web UI   {describe(default_dist(os.environ))}",
        "  stop     Ctrl-C",
    ]
    return "\n".join(lines) + "\n"


def _origins(origins: tuple[str, ...]) -> str:
    if not origins:
        return "same origin only  (STEPLINE_CORS_ORIGINS=http://localhost:3000,... admits other front ends)"
    return f"same origin and {', '.join(origins)}  (STEPLINE_CORS_ORIGINS)"


def serve(host: str, port: int, *, aws: bool = False, out: TextIO = sys.stdout) -> None:
    """Run the dev server until interrupted."""
    import uvicorn

    url = f"http://{host}:{port}"
    if aws:
        _serve_aws(host, port, url, out)
        return
    with dev_server(DevConfig.from_env(os.environ)) as server:
        start_build(default_dist(os.environ), out)  # the UI, when web/dist is missing and npm is installed
        out.write(banner(server, url))
        out.flush()
        uvicorn.run(server.app, host=host, port=port, log_level="warning")


def _serve_aws(host: str, port: int, url: str, out: TextIO) -> None:
    import uvicorn

    from ..aws.wiring import services_from_env

    services = services_from_env()
    config = DevConfig.from_env(os.environ)
    identity = DevTokens(config.tokens)
    out.write(f"Stepline API at {url} over the deployed stack's resources ({identity.describe()})\n")
    out.flush()
    app = create_app(services, identity, ApiOptions(cors_origins=config.cors_origins))
    uvicorn.run(app, host=host, port=port, log_level="warning")
