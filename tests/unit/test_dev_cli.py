"""`stepline dev`'s command line: help that says what it does, --version, a port in use as one line."""

from __future__ import annotations

import argparse
import asyncio
import io
import socket
from pathlib import Path

import pytest

from stepline import __version__
from stepline.cli import _parser, main  # pyright: ignore[reportPrivateUsage]
from stepline.local.reload import child_command, watched_folders
from stepline.local.serving import ServeOptions, bind


def dev_parser() -> argparse.ArgumentParser:
    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))  # pyright: ignore[reportPrivateUsage]
    return commands.choices["dev"]  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]


def test_the_help_states_the_defaults_the_server_uses() -> None:
    parser = dev_parser()
    text = parser.format_help()
    defaults = ServeOptions()
    parsed = parser.parse_args([])
    assert (parsed.host, parsed.port, Path(parsed.data), parsed.log_level) == (
        defaults.host,
        defaults.port,
        defaults.data_dir,
        defaults.log_level,
    )
    for fragment in (f"default {defaults.host}", f"default {defaults.port}", f"default {defaults.data_dir}"):
        assert fragment in " ".join(text.split()), fragment
    assert f"default {defaults.log_level}" in " ".join(text.split())
    # moto is what --memory uses, not what `stepline dev` is: the command's own summary does not say it
    summary = " ".join(text.split("options:")[0].split())
    assert "moto" not in summary and "data folder" in summary
    for option in ("--agent MODULE:ATTR", "--reload", "--log-level"):
        assert option in text
    assert "--listener-fd" not in text  # --reload's plumbing, not an option for people


def test_version_prints_the_packages_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"stepline {__version__}\n"


def test_a_port_in_use_is_one_line_naming_it_and_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert main(["dev", "--memory", "--port", str(port)], out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"port {port}" in err and "--port" in err


def test_the_reloaded_server_gets_the_same_options_and_the_bound_socket() -> None:
    options = ServeOptions(host="127.0.0.1", port=0, data_dir=Path("here"), agent="agent:agent", log_level="info")
    command = child_command(options, 7)
    assert command[1:4] == ["-m", "stepline", "dev"]
    assert dev_parser().parse_args(command[4:]) == argparse.Namespace(
        host="127.0.0.1",
        port=8000,  # unused: the socket is inherited
        data="here",
        memory=False,
        aws=False,
        agent="agent:agent",
        reload=False,
        log_level="info",
        listener_fd=7,
        handler=dev_parser().get_default("handler"),
    )
    assert "--memory" in child_command(ServeOptions(data_dir=None), 7)


def test_reload_watches_the_working_directory_and_an_agent_package_outside_it(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "libs"
    (elsewhere / "myagents").mkdir(parents=True)
    project.mkdir()
    (elsewhere / "myagents" / "__init__.py").write_text("agent = None\n")
    (project / "agent.py").write_text("agent = None\n")
    assert watched_folders("agent:agent", project) == [project.resolve()]
    import sys

    sys.path.insert(0, str(elsewhere))
    try:
        folders = watched_folders("myagents.sub:agent", project)
    finally:
        sys.path.remove(str(elsewhere))
    assert folders == [project.resolve(), (elsewhere / "myagents").resolve()]
    assert watched_folders("stepline.tools.workspace:TOOLS", project)[0] == project.resolve()


@pytest.mark.parametrize("reloaded", [False, True], ids=["bound", "from --reload's fd"])
def test_every_connection_the_dev_server_accepts_sends_without_waiting_for_the_clients_ack(reloaded: bool) -> None:
    """TCP_NODELAY on the accepted sockets: asyncio sets it only when the listener's protocol is TCP.

    Without it a response written in two parts (headers, then body; one SSE frame after another)
    waited for the client's delayed ACK, ~40 ms a response on a kept-alive connection.
    """
    listener = bind("127.0.0.1", 0)
    if reloaded:  # the server process of --reload gets the supervisor's socket by its fd
        listener = socket.socket(fileno=listener.detach())

    async def accept_one() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(connected, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            value = await asyncio.wait_for(accepted, 10)
            writer.close()
            return value

    assert asyncio.run(accept_one()) != 0
