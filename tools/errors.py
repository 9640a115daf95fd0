"""Warden's tool-layer exceptions.

Every error that can reach a user is a ``WardenError`` and names the file, field, command or URL
it is about, so the CLI can print it as one line and exit 2.

    WardenError
    ├── ParseError          malformed raw output (path, line, reason)
    ├── UnknownFormatError  a format id no parser knows (path, format)
    ├── SnapshotError       manifest missing/invalid, file listed but absent, file present but unlisted
    ├── SourceError         fetching raw output failed
    │   ├── CommandError    a local or remote command failed or timed out (argv, exit code, stderr)
    │   └── HTTPSourceError an HTTP fetch failed (url, status)
    ├── ConfigError         a config file or field is invalid (path, field)
    └── ActionError         an action could not be planned, executed or verified
        └── NotAllowedError an action was asked to execute without an allowing policy decision
"""

from __future__ import annotations

__all__ = [
    "WardenError",
    "ParseError",
    "UnknownFormatError",
    "SnapshotError",
    "SourceError",
    "CommandError",
    "HTTPSourceError",
    "ConfigError",
    "ActionError",
    "NotAllowedError",
]


class WardenError(Exception):
    """Base of every Warden error; ``str(err)`` is a single line fit for a terminal."""


class ParseError(WardenError):
    """Raw output could not be parsed.

    Attributes:
        path: the file (snapshot-relative path, or the command) the text came from.
        line: 1-based line number, or None when the error is about the whole file.
        reason: what was wrong, in a few words.
    """

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {reason}")


class UnknownFormatError(WardenError):
    """A manifest or request named a format id that no parser handles."""

    def __init__(self, path: str, format_id: str) -> None:
        self.path = path
        self.format_id = format_id
        super().__init__(f"{path}: unknown format {format_id!r}")


class SnapshotError(WardenError):
    """A snapshot or incident directory is not valid (manifest, listed files, incident.yaml)."""


class SourceError(WardenError):
    """Fetching raw output from the cluster failed."""


class CommandError(SourceError):
    """A command exited non-zero, timed out, or could not be started.

    Attributes:
        argv: the argument list that was run.
        returncode: exit status, or None when it never ran or timed out.
        stderr: the first part of its standard error.
        stdout: what it printed before failing (tools such as `dcgmi diag` exit non-zero yet print
            their full result), "" when unknown.
    """

    def __init__(self, argv: list[str], returncode: int | None, stderr: str, *, host: str | None = None,
                 stdout: str = "") -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        self.stdout = stdout
        self.host = host
        first = (stderr.strip().splitlines() or [""])[0][:200]
        on = f" on {host}" if host else ""
        status = "could not run" if returncode is None else f"exited {returncode}"
        super().__init__(f"command {' '.join(argv)!r}{on} {status}: {first}".rstrip(": "))


class HTTPSourceError(SourceError):
    """An HTTP fetch failed (connection error, timeout or non-2xx status)."""

    def __init__(self, url: str, status: int | None, detail: str) -> None:
        self.url = url
        self.status = status
        super().__init__(f"GET {url} failed" + (f" with HTTP {status}" if status else "") + f": {detail}")


class ConfigError(WardenError):
    """A configuration file or field is invalid; the message names the file and field."""


class ActionError(WardenError):
    """An action could not be planned, executed or verified."""


class NotAllowedError(ActionError):
    """An action's execute() was called without a policy decision allowing that exact plan."""
