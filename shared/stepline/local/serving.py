"""One `stepline dev` server process: bind the port, build the app, print the banner, serve until stopped.

The port is bound first, so a port in use is one line naming it and `--port` (exit status 2)
before any data folder is opened; `--reload`'s supervisor binds it once and hands the socket to
each server process it starts (`listener_fd`), so the port stays taken across restarts.
`--log-level` sets uvicorn's loggers (at `info` and below, its access log too) and Stepline's own.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..errors import StepLineError
from .dev import DevConfig, banner, dev_server
from .dev_defaults import DEFAULT_DATA_DIR, DEFAULT_HOST, DEFAULT_LOG_LEVEL, DEFAULT_PORT, LogLevel
from .ui_build import default_dist, start_build

__all__ = ["PortInUse", "ServeOptions", "bind", "serve"]

SHUTDOWN_SECONDS = 1
"""How long a stop waits for open streams before it ends them (they never end by themselves while a run waits)."""


class PortInUse(StepLineError):
    """The address to listen on is taken (or not this machine's)."""


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What `stepline dev` was asked for."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    aws: bool = False
    data_dir: Path | None = Path(DEFAULT_DATA_DIR)
    """None: in memory (`--memory`)."""
    agent: str | None = None
    """`--agent MODULE:ATTR`, over `STEPLINE_AGENT`."""
    log_level: LogLevel = DEFAULT_LOG_LEVEL
    listener_fd: int | None = None
    """A bound socket inherited from `--reload`'s supervisor, instead of binding one."""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on `host:port`, or PortInUse saying which port and how to choose another."""
    try:
        listener = socket.create_server((host, port))
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise PortInUse(
                f"port {port} on {host} is in use (another stepline dev?): choose another with --port PORT "
                "(--port 0 takes any free port)"
            ) from None
        if error.errno == errno.EADDRNOTAVAIL or isinstance(error, socket.gaierror):
            raise PortInUse(f"cannot listen on {host}:{port} ({error.strerror}): check --host") from None
        raise
    return tcp(listener)


def tcp(listener: socket.socket) -> socket.socket:
    """The listener with its protocol named, so asyncio turns Nagle off on every connection it accepts.

    `socket.create_server` leaves the protocol 0 and the sockets it accepts inherit that; asyncio
    sets `TCP_NODELAY` only on sockets whose protocol is TCP. Without it a response written in two
    parts (the headers, then the body; an SSE frame after the one before) waits for the client's
    delayed ACK, up to 40 ms on Linux, on a kept-alive connection.
    """
    if listener.proto == socket.IPPROTO_TCP or listener.family not in (socket.AF_INET, socket.AF_INET6):
        return listener
    return socket.socket(listener.family, listener.type, socket.IPPROTO_TCP, fileno=listener.detach())


def _environment(options: ServeOptions) -> Mapping[str, str]:
    return {**os.environ, "STEPLINE_AGENT": options.agent} if options.agent is not None else os.environ


def _log_to(level: LogLevel) -> None:
    """Stepline's loggers at `level`, on standard error (uvicorn's are set by its Config)."""
    logger = logging.getLogger("stepline")
    logger.setLevel(level.upper())
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(name)s: %(message)s"))
        logger.addHandler(handler)


def serve(options: ServeOptions, out: TextIO = sys.stdout) -> None:
    """Run the dev server until interrupted."""
    _log_to(options.log_level)
    listener = (
        socket.socket(fileno=options.listener_fd)
        if options.listener_fd is not None
        else bind(options.host, options.port)
    )
    url = f"http://{options.host}:{listener.getsockname()[1]}"  # port 0: the port the OS chose
    env = _environment(options)
    with contextlib.ExitStack() as stack:
        stack.enter_context(listener)
        if options.aws:
            app = _aws_app(env, url, out)
        else:
            server = stack.enter_context(dev_server(DevConfig.from_env(env), data_dir=options.data_dir))
            start_build(default_dist(env), out)  # the UI, in a checkout where web/dist is missing and npm is installed
            server.unattended.notifier.base_url = url  # the approval links it prints
            out.write(banner(server, url))
            out.flush()
            app = server.app
        _run(app, listener, options.log_level)


def _run(app: Any, listener: socket.socket, log_level: LogLevel) -> None:
    import uvicorn

    config = uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=SHUTDOWN_SECONDS)
    logging.getLogger("uvicorn.error").addFilter(_say_streams_ended)  # after Config: it sets logging up
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C it handled: a clean stop
        uvicorn.Server(config).run(sockets=[listener])


def _say_streams_ended(record: logging.LogRecord) -> bool:
    """The streams a stop cuts, which uvicorn reports as an error, are the plan here (clients resume)."""
    if "timeout graceful shutdown exceeded" in record.getMessage():
        record.msg, record.args = "stopping: open streams ended without [DONE]; their clients resume", ()
        record.levelno, record.levelname = logging.WARNING, "WARNING"
    return True


def _aws_app(env: Mapping[str, str], url: str, out: TextIO) -> Any:
    from ..api.app import create_app
    from ..api.deps import ApiOptions
    from ..api.identity import DevTokens
    from ..aws.wiring import services_from_env

    services = services_from_env()
    config = DevConfig.from_env(env)
    identity = DevTokens(config.tokens)
    out.write(f"Stepline API at {url} over the deployed stack's resources ({identity.describe()})\n")
    out.flush()
    return create_app(services, identity, ApiOptions(cors_origins=config.cors_origins))
