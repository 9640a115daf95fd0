"""Daemons by pid file: start, check, stop; and bounded waits.

A pid file only counts when the process it names is alive, is not a zombie, and its command line
contains the expected program name; otherwise it is stale (left by a crash or a reboot) and is
removed. So starting twice, or after a crash, is safe, and the sandbox never signals a process
it did not start (another Slurm on this host is left alone).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from sandbox.errors import SandboxError, SandboxTimeout

__all__ = ["read_pid", "running_pid", "spawn", "stop", "wait_until"]


def read_pid(pid_file: Path) -> int | None:
    """The pid written in ``pid_file``, or None when it is missing or not a number."""
    try:
        return int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int, expect: str) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    if state in ("Z", "X"):
        _reap(pid)
        return False
    return expect in cmdline


def _reap(pid: int) -> None:
    """Collect ``pid`` if it is our own exited child (no-op otherwise)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def running_pid(pid_file: Path, expect: str) -> int | None:
    """Pid of the live process named by ``pid_file`` whose command line contains ``expect``.

    A stale pid file (dead process, zombie, or a recycled pid running something else) is removed
    and None is returned.
    """
    pid = read_pid(pid_file)
    if pid is not None and _alive(pid, expect):
        return pid
    pid_file.unlink(missing_ok=True)
    return None


def spawn(
    argv: Sequence[str], *, pid_file: Path, log_file: Path, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> int:
    """Start a foreground daemon in its own session, output to ``log_file``, and write its pid file.

    Returns:
        The pid of the new process.

    Raises:
        SandboxError: when the program cannot be started.
    """
    log_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as log:
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            raise SandboxError(f"cannot start {argv[0]}: {exc}") from exc
    pid_file.write_text(f"{proc.pid}\n")
    return proc.pid


def stop(pid_file: Path, expect: str, *, timeout_s: float = 15.0) -> bool:
    """Stop the process named by ``pid_file`` (SIGTERM, then SIGKILL after ``timeout_s``).

    Returns:
        True when a running process was stopped, False when none was running.
    """
    pid = running_pid(pid_file, expect)
    if pid is None:
        return False
    _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _alive(pid, expect):
            break
        time.sleep(0.1)
    else:
        _signal(pid, signal.SIGKILL)
        time.sleep(0.2)
        _reap(pid)
    pid_file.unlink(missing_ok=True)
    return True


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def wait_until(check: Callable[[], bool], *, timeout_s: float, what: str, hint: str = "", interval_s: float = 0.25) -> None:
    """Poll ``check`` until it returns True or ``timeout_s`` passes.

    Raises:
        SandboxTimeout: naming ``what`` was awaited and where to look (``hint``).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        if check():
            return
        if time.monotonic() > deadline:
            raise SandboxTimeout(f"timed out after {timeout_s:g} s waiting for {what}" + (f"; see {hint}" if hint else ""))
        time.sleep(interval_s)
