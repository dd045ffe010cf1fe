"""Shared `AsyncOpenAI` clients and the per-base-URL answer of the Responses API probe.

    ClientPool       one client per (event loop, base URL, API key), built with `max_retries=0`
    OpenAIApiCache   which API ("responses" or "chat") a base URL speaks, probed once

An httpx connection pool belongs to the event loop that opened it, so clients are kept per loop and
never carried into another one; whoever owns a loop closes its clients before the loop ends
(`aclose_openai_clients()`, or `close_model(model)` for one model's). Both structures are guarded by
a lock, so models on several threads (each with its own loop) may share them.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
import weakref
from collections.abc import Awaitable, Callable

import httpx2
import openai

from .options import OpenAIApi

__all__ = ["CLIENTS", "ClientPool", "OpenAIApiCache", "aclose_openai_clients"]


class ClientPool:
    """One `AsyncOpenAI` per (event loop, base URL, API key), thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], openai.AsyncOpenAI]]
        self._clients = weakref.WeakKeyDictionary()
        self._ssl_context: ssl.SSLContext | None = None

    def get(self, *, base_url: str, api_key: str) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        with self._lock:
            clients = self._clients.setdefault(loop, {})
            client = clients.get((base_url, api_key))
            if client is None:
                http_client = openai.DefaultAsyncHttpxClient(verify=self._shared_ssl_context())
                client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, http_client=http_client)
                clients[(base_url, api_key)] = client
            return client

    def _shared_ssl_context(self) -> ssl.SSLContext:
        # Loading the trust store costs ~20 ms; a context is safe to share between clients and loops,
        # and a fresh loop per Lambda invocation would otherwise pay it on every call.
        if self._ssl_context is None:
            self._ssl_context = httpx2.create_ssl_context()
        return self._ssl_context

    async def aclose(self) -> None:
        with self._lock:
            clients = self._clients.pop(asyncio.get_running_loop(), {})
        for client in clients.values():
            await client.close()

    async def aclose_one(self, *, base_url: str, api_key: str) -> None:
        with self._lock:
            client = self._clients.get(asyncio.get_running_loop(), {}).pop((base_url, api_key), None)
        if client is not None:
            await client.close()


CLIENTS = ClientPool()
"""The process-wide pool the OpenAI models use."""


async def aclose_openai_clients() -> None:
    """Close the shared SDK clients of the running event loop (call before the loop ends)."""
    await CLIENTS.aclose()


class OpenAIApiCache:
    """Which API each base URL speaks, probed once and remembered (thread- and task-safe).

    Concurrent calls on one event loop share one probe; a probe that fails (connection, timeout)
    is not remembered, so the next call probes again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: dict[str, OpenAIApi] = {}
        self._pending: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]]
        self._pending = weakref.WeakKeyDictionary()

    def get(self, base_url: str) -> OpenAIApi | None:
        """The remembered API of `base_url`, if it was probed."""
        with self._lock:
            return self._results.get(base_url)

    def clear(self) -> None:
        """Forget every answer (for tests, or after a server changed)."""
        with self._lock:
            self._results.clear()

    async def resolve(self, base_url: str, probe: Callable[[], Awaitable[OpenAIApi]]) -> OpenAIApi:
        """The API of `base_url`, running `probe` only when nobody has yet."""
        with self._lock:
            if base_url in self._results:
                return self._results[base_url]
            locks = self._pending.setdefault(asyncio.get_running_loop(), {})
            lock = locks.setdefault(base_url, asyncio.Lock())
        async with lock:
            known = self.get(base_url)
            if known is not None:
                return known
            api = await probe()
            with self._lock:
                self._results[base_url] = api
            return api
