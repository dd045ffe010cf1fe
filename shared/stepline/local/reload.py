"""`stepline dev --reload`: restart the server when the agent's files change, as `fastapi dev` does.

A supervisor process binds the port once and starts the server (`python -m stepline dev ...`) as a
child that inherits the bound socket, so the port stays taken and connections queue while the
server restarts. It watches the working directory and the agent module's package (`watchfiles`:
inotify, or polling where the OS has none) for changes of Python, JSON, TOML and YAML files,
ignoring the data folder, virtual environments and caches. On a change it stops the child as
Ctrl-C would (open streams end without `[DONE]`, their clients resume) and waits for it to exit, so
the data folder's lock is released before the next child takes it; the next child drives every
unfinished run again, as any restart does: a run waiting for an approval waits on. A child that
exits by itself (an agent that does not import) is started again on the next change.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from importlib.machinery import PathFinder
from pathlib import Path
from types import FrameType
from typing import TextIO

import watchfiles

from .serving import ServeOptions, bind

__all__ = ["WATCHED_SUFFIXES", "child_command", "supervise", "watched_folders"]

WATCHED_SUFFIXES = (".py", ".json", ".toml", ".yaml", ".yml")
_IGNORED_FOLDERS = (".stepline", ".aws-sam", "venv", "build", "dist", ".ruff_cache")
STOP_SECONDS = 15
"""How long a stopping server may take before it is killed (a stop ends open streams after a second)."""


class _AgentFiles(watchfiles.DefaultFilter):
    """Source and data files, outside the data folder, environments and caches."""

    def __init__(self, ignore: Sequence[Path]) -> None:
        super().__init__(
            ignore_dirs=(*watchfiles.DefaultFilter.ignore_dirs, *_IGNORED_FOLDERS),
            ignore_paths=[str(path) for path in ignore],
        )

    def __call__(self, change: watchfiles.Change, path: str) -> bool:
        return path.endswith(WATCHED_SUFFIXES) and super().__call__(change, path)


def watched_folders(agent: str | None, cwd: Path) -> list[Path]:
    """The working directory, and the agent module's package when it lies outside it (not installed)."""
    folders = [cwd.resolve()]
    if not agent:
        return folders
    top = agent.split(":", 1)[0].split(".", 1)[0]
    spec = PathFinder.find_spec(top, [str(cwd), *sys.path])  # finds the module without importing it
    if spec is None or spec.origin is None:
        return folders
    origin = Path(spec.origin).resolve()
    folder = origin.parent  # a package's __init__.py, or a module's folder
    installed = folder.is_relative_to(Path(sys.prefix).resolve())
    if not installed and not any(folder.is_relative_to(f) for f in folders):
        folders.append(folder)
    return folders


def child_command(options: ServeOptions, fd: int) -> list[str]:
    """The server process's command line: the same options, on the inherited socket."""
    command = [sys.executable, "-m", "stepline", "dev", "--host", options.host, "--log-level", options.log_level]
    if options.aws:
        command.append("--aws")
    elif options.data_dir is None:
        command.append("--memory")
    else:
        command += ["--data", str(options.data_dir)]
    if options.agent is not None:
        command += ["--agent", options.agent]
    return [*command, "--listener-fd", str(fd)]


def _stop(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is None:
        child.send_signal(signal.SIGINT)  # as Ctrl-C: uvicorn's graceful stop
    try:
        child.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def supervise(options: ServeOptions, out: TextIO, *, cwd: Path | None = None) -> None:
    """Serve, restarting the server on every change of the watched files, until interrupted."""
    cwd = cwd or Path.cwd()
    listener = bind(options.host, options.port)
    folders = watched_folders(options.agent, cwd)
    ignore = [] if options.data_dir is None else [(cwd / options.data_dir).resolve()]
    stop = threading.Event()

    def on_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    # Ctrl-C and SIGTERM only set `stop`, which the watch loop reads between its waits: a KeyboardInterrupt
    # raised wherever the signal lands (between two waits, or consumed inside watchfiles) could be lost.
    previous = {sig: signal.signal(sig, on_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    command = child_command(options, listener.fileno())
    names = ", ".join(str(f) for f in folders)
    out.write(f"reload: watching {names} ({', '.join(WATCHED_SUFFIXES)}); the server restarts when they change\n")
    out.flush()
    child = subprocess.Popen(command, pass_fds=[listener.fileno()], cwd=cwd)
    exited = False
    try:
        changes_seen = watchfiles.watch(
            *folders,
            watch_filter=_AgentFiles(ignore),
            stop_event=stop,
            yield_on_timeout=True,
            rust_timeout=500,
            raise_interrupt=False,
        )
        for changes in changes_seen:
            if stop.is_set():
                break
            if changes:
                changed = sorted({Path(path).name for _, path in changes})
                out.write(f"reload: {', '.join(changed)} changed; restarting the server\n")
                out.flush()
                _stop(child)
                child = subprocess.Popen(command, pass_fds=[listener.fileno()], cwd=cwd)
                exited = False
            elif not exited and child.poll() is not None:
                exited = True
                out.write(f"reload: the server exited (status {child.returncode}); a change starts it again\n")
                out.flush()
    finally:
        _stop(child)
        listener.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
