"""Reading paths that came from cluster data (a job's StdOut/StdErr, its WorkDir and checkpoints)
only under configured roots, never through a symlink out of them, and only what the job's user owns.

A job's user chooses its StdOut; a collector that runs with privileges would otherwise copy
``/etc/shadow`` into the snapshot because a job said so. Every such path is checked twice:

1. here, lexically (absolute, no NUL, ``os.path.normpath`` under a root): a path that cannot be
   under a root is refused without running anything;
2. where it is read (this host, or the login node through SSH), by a fixed POSIX ``sh`` script
   whose arguments are the path, the roots and the user — data, never shell text (over SSH every
   argument is quoted by ``shlex.join``). For a job log the script opens the file once, on fd 3,
   asks ``/proc/self/fd/3`` what was really opened (symlinks and ``..`` resolved), checks that
   it lies under a root (each root itself resolved with ``realpath -e``) and that its owner is
   the job's user, and only then reads the last N bytes *of that open file* (no race between the
   check and the read; a FIFO or device is refused before it is opened). For the checkpoint
   commands (``find``, ``cat``, ``stat``, ``sha256sum``) every absolute argument is resolved and
   checked the same way, and when the script runs as root it drops to the job's user with
   ``runuser`` before running the command, so the kernel enforces that user's rights.

A refusal exits 77 with one line on stderr (``warden: … outside job_logs.roots``), which the live
collector records as unreadable evidence.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from tools.errors import CommandError

__all__ = ["JOB_LOG_SCRIPT", "GUARD_SCRIPT", "REFUSED", "safe_user", "under_roots", "job_log_argv",
           "guarded_argv", "GuardedRunner", "describe_guarded", "guarded_failure"]

REFUSED = 77
"""Exit status of a refusal (EX_NOPERM)."""

_USER = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")

JOB_LOG_SCRIPT = r"""p=$1 n=$2 owner=$3; shift 3
[ -f "$p" ] || { echo "warden: $p: not a regular file" >&2; exit 77; }
exec 3<"$p" || exit 66
r=$(readlink /proc/self/fd/3) || { echo "warden: $p: cannot tell what was opened" >&2; exit 77; }
ok=
for root do
  rr=$(realpath -e -- "$root" 2>/dev/null) || continue
  case $r in "$rr"/*) ok=1; break;; esac
done
[ -n "$ok" ] || { echo "warden: $p is $r, outside job_logs.roots" >&2; exit 77; }
if [ -n "$owner" ]; then
  u=$(stat -L -c %U /proc/self/fd/3) || exit 66
  [ "$u" = "$owner" ] || { echo "warden: $r is owned by $u, not by the job's user $owner" >&2; exit 77; }
fi
exec tail -c "$n" <&3
"""
"""Arguments: path, bytes to read from its end, the job's user ("" = no owner check), roots..."""

GUARD_SCRIPT = r"""set -f
nl='
'
owner=$1 nroots=$2; shift 2
roots=
i=0
while [ "$i" -lt "$nroots" ]; do
  rr=$(realpath -e -- "$1" 2>/dev/null) && roots="$roots
$rr"
  shift; i=$((i + 1))
done
for a do
  case $a in /*) ;; *) continue;; esac
  r=$(realpath -m -- "$a") || { echo "warden: $a: cannot be resolved" >&2; exit 77; }
  ok=
  IFS=$nl
  for rr in $roots; do case $r in "$rr"/*) ok=1; break;; esac; done
  unset IFS
  [ -n "$ok" ] || { echo "warden: outside the configured roots: $a (is $r)" >&2; exit 77; }
  if [ -n "$owner" ] && [ -e "$r" ]; then
    u=$(stat -c %U -- "$r") || exit 66
    [ "$u" = "$owner" ] || { echo "warden: not the job's user's ($owner): $r is owned by $u" >&2; exit 77; }
  fi
done
if [ -n "$owner" ] && [ "$(id -u)" = 0 ] && command -v runuser >/dev/null 2>&1; then
  exec runuser -u "$owner" -- "$@"
fi
exec "$@"
"""
"""Arguments: the job's user ("" = none), the number of roots, the roots, then the command.
Roots containing a newline are refused in Python (they are split on newlines here)."""


def safe_user(name: str | None) -> bool:
    """A user name that can be passed to ``stat``/``runuser`` as itself (no option, no odd characters)."""
    return bool(name) and _USER.match(name or "") is not None


def under_roots(path: str, roots: Sequence[str]) -> bool:
    """``path`` is absolute and, read lexically (``normpath``), strictly under one of ``roots``.

    Only a first filter: symlinks are resolved where the file is read (see the module docstring).
    """
    if not path.startswith("/") or "\0" in path or "\n" in path:
        return False
    p = os.path.normpath(path)
    return any(p.startswith(os.path.normpath(r).rstrip("/") + "/") for r in roots)


def job_log_argv(path: str, max_bytes: int, owner: str | None, roots: Sequence[str]) -> list[str]:
    """The argument list that reads the last ``max_bytes`` of a job log, checked (module docstring)."""
    return ["sh", "-c", JOB_LOG_SCRIPT, "warden-job-log", path, str(max_bytes), owner or "", *roots]


def guarded_argv(argv: Sequence[str], owner: str | None, roots: Sequence[str]) -> list[str]:
    """``argv`` run only after every absolute argument was checked (module docstring)."""
    return ["sh", "-c", GUARD_SCRIPT, "warden-guard", owner or "", str(len(roots)), *roots, *argv]


def describe_guarded(argv: Sequence[str]) -> str | None:
    """How a guarded command is shown (progress, manifests, unreadable evidence); None for others."""
    if len(argv) >= 7 and argv[:3] == ["sh", "-c", JOB_LOG_SCRIPT]:
        return f"tail -c {argv[5]} {argv[4]} (checked under job_logs.roots" + \
            (f", owner {argv[6]})" if argv[6] else ")")
    if len(argv) >= 6 and argv[:3] == ["sh", "-c", GUARD_SCRIPT]:
        n = int(argv[5])
        return " ".join(argv[6 + n:]) + " (checked under the configured roots)"
    return None


def guarded_failure(e: CommandError) -> str:
    """The one-line reason a checked read failed: ``refused: …`` for a refusal (exit 77), else the
    exit status and the first line of stderr. The command itself is not repeated (it is the
    unreadable evidence's ``command``)."""
    first = (e.stderr.strip().splitlines() or [""])[0][:240]
    if e.returncode == REFUSED and first.startswith("warden: "):
        return "refused: " + first.removeprefix("warden: ")
    status = "could not run" if e.returncode is None else f"exited {e.returncode}"
    return f"{status}: {first}".rstrip(": ")


class GuardedRunner:
    """A CommandRunner that checks every absolute argument of each command against ``roots`` and
    the job's user before running it through ``runner`` (checkpoint verification).

    Args:
        runner: the runner commands go through (LocalSource or SSHSource).
        roots: directories the paths must resolve under; empty refuses every path.
        owner: the job's user; None refuses (the owner check cannot be made) unless ``owner_check`` is False.
        owner_check: require files to be owned by ``owner`` (and run as that user when root).
    """

    def __init__(self, runner, roots: Sequence[str], owner: str | None, *, owner_check: bool = True) -> None:  # noqa: ANN001
        self.runner = runner
        self.roots = [r for r in roots if "\n" not in r]
        self.owner = owner if safe_user(owner) else None
        self.owner_check = owner_check

    def run(self, argv: Sequence[str], *, timeout_s: float = 30.0, input_bytes: bytes | None = None) -> bytes:
        """Run ``argv`` after the checks.

        Raises:
            CommandError: (exit 77) a path outside the roots, a file another user owns, an unknown
                owner; or the command's own failure.
        """
        args = [str(a) for a in argv]
        bad = [a for a in args if a.startswith("/") and not under_roots(a, self.roots)]
        if bad:
            raise CommandError(args, REFUSED, f"warden: outside the configured roots "
                                              f"({', '.join(self.roots) or 'none configured'}): {bad[0]}")
        if self.owner_check and self.owner is None:
            raise CommandError(args, REFUSED, "warden: the job's user is unknown, so the owner check cannot be made")
        owner = self.owner if self.owner_check else None
        kwargs = {"timeout_s": timeout_s} if input_bytes is None else {"timeout_s": timeout_s, "input_bytes": input_bytes}
        try:
            return self.runner.run(guarded_argv(args, owner, self.roots), **kwargs)
        except CommandError as e:  # named by the command it stands for, not by the checking script
            raise CommandError(args, e.returncode, e.stderr, host=e.host, stdout=e.stdout) from e
