"""Lambda's CPU share at a memory size, imitated for a subprocess with a Linux cgroup's CPU quota.

Lambda gives a function CPU in proportion to its memory: 1,769 MB is one vCPU (the AWS Lambda
documentation, "Configuring Lambda function memory"). `cpu_quota(mb)` makes a cgroup whose CPU
quota is `mb / 1769` of one CPU per period and yields a `preexec_fn` that puts a new process (and
so everything it forks) into it. The period is short (10 ms by default) so that a burst of a few
milliseconds is slowed in proportion too: with a long period a short burst would run at full speed
until the period's budget is spent, which would make small memory sizes look better than a strict
share. How Lambda meters its share inside a period is not documented; this is the strict reading.

Bench only: it needs root and a cgroup file system with the `cpu` controller (v2's `cpu.max`, or
v1's `cpu.cfs_quota_us`), and says so when either is missing.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
from collections.abc import Callable, Generator
from pathlib import Path

__all__ = ["MB_PER_VCPU", "cpu_quota", "share_of"]

MB_PER_VCPU = 1769
"""Memory at which a Lambda function has the equivalent of one vCPU."""

_V2 = Path("/sys/fs/cgroup")
_V1 = Path("/sys/fs/cgroup/cpu")
_names = itertools.count(1)


def share_of(memory_mb: int) -> float:
    """The CPUs a function of `memory_mb` gets (0.579 at 1,024 MB)."""
    return memory_mb / MB_PER_VCPU


def _group_root() -> tuple[Path, bool]:
    """The cgroup folder to create groups in, and whether it is cgroup v2."""
    controllers = _V2 / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return _V2, True
    if (_V1 / "cpu.cfs_quota_us").exists():
        return _V1, False
    raise RuntimeError("no cgroup with the cpu controller at /sys/fs/cgroup (cpu.max or cpu/cpu.cfs_quota_us)")


@contextlib.contextmanager
def cpu_quota(memory_mb: int, period_us: int = 10_000) -> Generator[Callable[[], None]]:
    """A cgroup limited to Lambda's CPU share at `memory_mb`; yields the `preexec_fn` that joins it.

    The group is removed on exit: the processes started in it must have ended by then.
    """
    root, v2 = _group_root()
    group = root / f"stepline-bench-{os.getpid()}-{next(_names)}"
    share = share_of(memory_mb)
    period_us = max(period_us, math.ceil(1000 / share))  # the kernel's least quota is 1 ms
    quota_us = round(share * period_us)
    try:
        group.mkdir()
    except PermissionError as error:
        raise RuntimeError(f"cannot create a cgroup in {root} (root needed): {error}") from error
    try:
        if v2:
            (group / "cpu.max").write_text(f"{quota_us} {period_us}")
        else:
            (group / "cpu.cfs_period_us").write_text(str(period_us))
            (group / "cpu.cfs_quota_us").write_text(str(quota_us))
        procs = str(group / "cgroup.procs")

        def join() -> None:  # in the child, between fork and exec
            with open(procs, "w") as file:
                file.write(str(os.getpid()))

        yield join
    finally:
        with contextlib.suppress(OSError):
            group.rmdir()
