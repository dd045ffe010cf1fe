"""The dev server (the same app and local backend `stepline dev` runs) on a free port, in a thread."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from stepline.api.deps import ApiOptions
from stepline.local.backend import Engine
from stepline.local.dev import DevConfig, DevServer, dev_server

FAST = ApiOptions(poll_seconds=0.02, wait_poll_seconds=0.2, keep_alive_seconds=1.0)


@dataclass
class Running:
    url: str
    server: DevServer
    tokens: dict[str, str] = field(default_factory=dict)

    def client(self, user: str | None = None, **options: Any) -> httpx.Client:
        headers = {}
        if user is not None:
            token = next(t for t, u in self.tokens.items() if u == user)
            headers["authorization"] = f"Bearer {token}"
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **options)


def write_book(path: Path, scripts: list[dict[str, Any]], fallback: list[Any] | None = None) -> str:
    """A script book file for `STEPLINE_MODEL=scripted:<path>`; returns the model spec."""
    book: dict[str, Any] = {"description": "test book", "scripts": scripts}
    if fallback is not None:
        book["fallback"] = {"steps": fallback}
    path.write_text(json.dumps(book))
    return f"scripted:{path}"


def config(model: str | None = None, *, tokens: dict[str, str] | None = None, **overrides: Any) -> DevConfig:
    env = {
        "STEPLINE_MODEL": model or "",
        "STEPLINE_DEV_TOKENS": ",".join(f"{t}:{u}" for t, u in (tokens or {}).items()),
    }
    env.update(overrides)
    return DevConfig.from_env(env)


def free_socket() -> socket.socket:
    """A socket bound to a free loopback port (its URL can be known before the server starts)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


@contextmanager
def running(
    cfg: DevConfig,
    api: ApiOptions = FAST,
    *,
    sock: socket.socket | None = None,
    engine: Engine = "local",
    data_dir: Path | None = None,
) -> Iterator[Running]:
    """In memory on moto, or over a data folder (SQLite) as `stepline dev` keeps it by default;
    `engine="moto"` for a test that reads the execution history (moto's interpreter keeps one)."""
    with dev_server(cfg, api=api, engine=engine, data_dir=data_dir) as server:
        sock = sock or free_socket()
        port = sock.getsockname()[1]
        uv = uvicorn.Server(uvicorn.Config(server.app, log_level="warning", lifespan="on"))
        thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not uv.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the dev server did not start")
            time.sleep(0.01)
        try:
            yield Running(f"http://127.0.0.1:{port}", server, dict(cfg.tokens))
        finally:
            uv.should_exit = True
            thread.join(10)
            sock.close()
