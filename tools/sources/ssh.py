"""SSH source: run a command on a remote host (a Slurm login node) through Fabric.

The argument list is turned into one remote command line with ``shlex.join``, so every argument
(job names, node names, reasons that came from the cluster) is single-quoted for the remote POSIX
shell and can never become shell syntax there. Standard output is read from the SSH channel as
raw bytes, so a non-UTF-8 output reaches the parser unchanged and fails there with a clear error.

paramiko's, invoke's and socket errors are mapped to ``CommandError`` (with ``host``) here only.
"""

from __future__ import annotations

import shlex
import socket
import time
from collections.abc import Mapping, Sequence

import paramiko
from fabric import Connection
from invoke.exceptions import Failure as InvokeFailure

from tools.errors import CommandError
from tools.sources.base import FetchRequest, RawArtifact

__all__ = ["SSHSource", "remote_command"]

_STDERR_KEEP_BYTES = 4000
_POLL_S = 0.02


def remote_command(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The remote command line for ``argv``: every argument quoted with ``shlex.join``.

    Environment variables are passed through ``env NAME=value …`` (also quoted), never by
    splicing text into a shell string.

    Example:
        >>> remote_command(["squeue", "-n", "x; rm -rf /"], {"SLURM_CONF": "/etc/slurm/slurm.conf"})
        "env SLURM_CONF=/etc/slurm/slurm.conf squeue -n 'x; rm -rf /'"
    """
    prefix = ["env", *(f"{k}={v}" for k, v in (env or {}).items())] if env else []
    return shlex.join([*prefix, *(str(a) for a in argv)])


class SSHSource:
    """A Source that runs commands on one remote host over SSH (Fabric ``Connection``).

    Args:
        host: the remote host name or address.
        user: remote user (default: Fabric's default, the local user or ~/.ssh/config).
        port: SSH port.
        key_filename: private key file(s) to authenticate with.
        env: environment for every remote command (e.g. SLURM_CONF), passed via ``env``.
        connect_timeout_s: TCP/SSH handshake timeout in seconds.
        connection: an existing Fabric Connection to reuse instead of building one.
    """

    name = "ssh"

    def __init__(
        self,
        host: str,
        *,
        user: str | None = None,
        port: int = 22,
        key_filename: str | list[str] | None = None,
        env: Mapping[str, str] | None = None,
        connect_timeout_s: float = 10.0,
        connection: Connection | None = None,
    ) -> None:
        self.host = host
        self.env = dict(env or {})
        if connection is None:
            connect_kwargs: dict[str, object] = {}
            if key_filename is not None:
                connect_kwargs["key_filename"] = key_filename
            connection = Connection(
                host, user=user, port=port, connect_timeout=connect_timeout_s, connect_kwargs=connect_kwargs
            )
        self.connection = connection

    def close(self) -> None:
        """Close the SSH connection (it is reopened on the next fetch)."""
        self.connection.close()

    def run(self, argv: Sequence[str], *, timeout_s: float = 30.0) -> bytes:
        """Run ``argv`` on the remote host and return its standard output as bytes.

        Raises:
            CommandError: (with ``host``) when the connection or authentication fails, the command
                times out (returncode None) or exits non-zero (its returncode and stderr).
        """
        args = [str(a) for a in argv]
        if not args:
            raise CommandError([], None, "empty argument list", host=self.host)
        command = remote_command(args, self.env)
        try:
            self.connection.open()
            transport = self.connection.client.get_transport()
            if transport is None:
                raise CommandError(args, None, "SSH transport is not open", host=self.host)
            channel = transport.open_session(timeout=timeout_s)
            try:
                return self._exec(channel, command, args, timeout_s)
            finally:
                channel.close()
        except (paramiko.SSHException, InvokeFailure, socket.error, EOFError) as exc:  # socket.error is OSError
            raise CommandError(args, None, f"{type(exc).__name__}: {exc}", host=self.host) from exc

    def _exec(self, channel: paramiko.Channel, command: str, args: list[str], timeout_s: float) -> bytes:
        """Run ``command`` on an open channel, draining stdout and stderr until exit or deadline."""
        channel.set_combine_stderr(False)
        channel.setblocking(False)
        channel.exec_command(command)
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + timeout_s
        while True:
            got = False
            while channel.recv_ready():
                out += channel.recv(65536)
                got = True
            while channel.recv_stderr_ready():
                chunk = channel.recv_stderr(65536)
                if len(err) < _STDERR_KEEP_BYTES:
                    err += chunk
                got = True
            if channel.exit_status_ready() and not channel.recv_ready() and not channel.recv_stderr_ready():
                break
            if time.monotonic() > deadline:
                raise CommandError(args, None, f"timed out after {timeout_s:g} s", host=self.host)
            if not got:
                time.sleep(_POLL_S)
        status = channel.recv_exit_status()
        if status != 0:
            raise CommandError(args, status, err.decode("utf-8", "replace"), host=self.host,
                               stdout=out[:1_000_000].decode("utf-8", "replace"))
        return bytes(out)

    def fetch(self, req: FetchRequest) -> RawArtifact:
        """Run ``req.argv`` on the remote host and return its standard output as an artifact.

        Raises:
            CommandError: when ``req.argv`` is missing or the remote command fails (see ``run``).
        """
        if not req.argv:
            raise CommandError([], None, f"an SSH fetch of {req.format} needs argv", host=self.host)
        data = self.run(req.argv, timeout_s=req.timeout_s)
        command = shlex.join(req.argv)
        return RawArtifact(
            format=req.format,
            data=data,
            path=req.path or f"{self.host}: {command}",
            command=command,
            node=req.node,
            job=req.job,
        )
