"""Local source: run a command on this host and keep its standard output byte for byte.

Commands are argument lists handed straight to the kernel (``subprocess`` without a shell), so
text that came from the cluster can never be interpreted by a shell. Every failure (not found,
not executable, non-zero exit, timeout) becomes one ``CommandError`` naming the argv.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.errors import CommandError
from tools.sources.base import FetchRequest, RawArtifact

__all__ = ["LocalSource"]

_STDERR_KEEP_CHARS = 4000


class LocalSource:
    """A Source that runs commands on the local host.

    Args:
        env: extra environment variables laid over this process's environment, e.g.
            ``{"SLURM_CONF": "/path/slurm.conf"}`` to point the Slurm commands at a private cluster.
        cwd: working directory for the commands (default: the current one).

    Example:
        >>> src = LocalSource(env={"SLURM_CONF": "/tmp/sbx/etc/slurm.conf"})
        >>> art = src.fetch(FetchRequest(format="sinfo-text", argv=["sinfo"]))  # doctest: +SKIP
    """

    name = "local"

    def __init__(self, env: Mapping[str, str] | None = None, *, cwd: Path | None = None) -> None:
        self.env: dict[str, str] = dict(env or {})
        self.cwd = cwd

    def run(self, argv: Sequence[str], *, timeout_s: float = 30.0, input_bytes: bytes | None = None) -> bytes:
        """Run ``argv`` and return its standard output.

        Args:
            argv: the command as an argument list (never a shell string).
            timeout_s: wall-clock limit in seconds; the process is killed when it is exceeded.
            input_bytes: bytes fed to its standard input (default: none, stdin is /dev/null).

        Returns:
            The command's standard output, unchanged.

        Raises:
            CommandError: the command could not be started (returncode None), timed out
                (returncode None, stderr says so) or exited non-zero (its returncode and stderr).
        """
        args = [str(a) for a in argv]
        if not args:
            raise CommandError([], None, "empty argument list")
        env = {**os.environ, **self.env}
        try:
            proc = subprocess.run(
                args,
                input=input_bytes,
                stdin=None if input_bytes is not None else subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout_s,
                env=env,
                cwd=self.cwd,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            partial = (exc.stderr or b"").decode("utf-8", "replace")[:_STDERR_KEEP_CHARS]
            raise CommandError(args, None, f"timed out after {timeout_s:g} s {partial}".strip()) from exc
        except OSError as exc:  # FileNotFoundError, PermissionError, exec format errors
            raise CommandError(args, None, f"{type(exc).__name__}: {exc.strerror or exc}") from exc
        if proc.returncode != 0:
            stderr = proc.stderr.decode("utf-8", "replace")[:_STDERR_KEEP_CHARS]
            raise CommandError(args, proc.returncode, stderr, stdout=proc.stdout.decode("utf-8", "replace")[:1_000_000])
        return proc.stdout

    def fetch(self, req: FetchRequest) -> RawArtifact:
        """Run ``req.argv`` locally and return its standard output as an artifact.

        Raises:
            CommandError: when ``req.argv`` is missing or the command fails (see ``run``).
        """
        if not req.argv:
            raise CommandError([], None, f"a local fetch of {req.format} needs argv")
        data = self.run(req.argv, timeout_s=req.timeout_s)
        command = shlex.join(req.argv)
        return RawArtifact(
            format=req.format,
            data=data,
            path=req.path or command,
            command=command,
            node=req.node,
            job=req.job,
        )
