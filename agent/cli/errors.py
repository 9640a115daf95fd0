"""Every failure a user can cause, as one line with the next step, and its exit code (no traceback).

    exit 2   bad input: a malformed file or manifest, an invalid config (file and field named), an
             unknown model alias, a refused gateway key, an unreachable gateway, a busy port, a
             missing approver config, a policy that does not load, wrong command-line usage
    exit 1   a Warden bug (an exception nobody expected): one line, and the traceback with WARDEN_DEBUG=1
    exit 130 interrupted (Ctrl-C)

:func:`describe` knows the exceptions of Warden's layers and of the model stack by name, so that
importing this module imports neither pydantic-ai nor the gateway. With ``WARDEN_DEBUG=1`` the
traceback is printed before the line.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from tools.errors import WardenError

__all__ = ["EXIT_ERROR", "EXIT_BUG", "EXIT_INTERRUPTED", "describe", "report", "warden_errors", "err_console",
           "debug_enabled", "print_error"]

EXIT_ERROR = 2
EXIT_BUG = 1
EXIT_INTERRUPTED = 130


def __getattr__(name: str) -> object:
    if name == "err_console":  # a rich console for stderr, made on first use: `warden --help` never needs rich
        from rich.console import Console

        console = Console(stderr=True, highlight=False, soft_wrap=True)
        globals()["err_console"] = console
        return console
    raise AttributeError(name)


def print_error(line: str) -> None:
    """``error: <line>`` on stderr, as one line."""
    print(f"error: {line}", file=sys.stderr, flush=True)


def debug_enabled() -> bool:
    """``WARDEN_DEBUG`` is set to something other than empty/0/false."""
    return os.environ.get("WARDEN_DEBUG", "").strip().lower() not in ("", "0", "false", "no")


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _names(e: BaseException) -> set[str]:
    return {c.__name__ for c in type(e).__mro__}


def _gateway_where() -> str:
    url = os.environ.get("WARDEN_GATEWAY_URL")
    return f"the gateway at {url}" if url else "the in-process gateway"


def _body_message(e: BaseException) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return _one_line(inner["message"])
    return _one_line(getattr(e, "message", "") or e)


def _model_error(e: BaseException, names: set[str]) -> str | None:
    """The line for a pydantic-ai model failure, by its class names (the agent stack is not imported here)."""
    model = getattr(e, "model_name", "?")
    status = getattr(e, "status_code", None)
    msg = _body_message(e)
    if "ModelAuthenticationError" in names or status in (401, 403):
        return (f"{_gateway_where()} refused the key ({status or 'auth'}: {msg}); set WARDEN_GATEWAY_KEY to a key "
                "from `warden gateway keys create NAME` on the gateway's host")
    if "ModelNotFoundError" in names or status == 404:
        return (f"unknown model alias {model!r} ({msg}); use an alias the gateway routes, or define it in a "
                "gateway config (see `warden config show`)")
    if "ModelConnectionError" in names:
        if os.environ.get("WARDEN_GATEWAY_URL"):
            return (f"cannot reach {_gateway_where()} ({msg}); start it with `warden gateway serve` or unset "
                    "WARDEN_GATEWAY_URL to use the in-process gateway")
        return f"the model behind alias {model!r} could not be reached ({msg}); check the gateway config's base URL"
    if status == 429 or "ModelRateLimitError" in names or "ModelQuotaExceededError" in names:
        return f"{_gateway_where()} refused the request: {msg}; wait for the window, or raise the limit in its config"
    if "ModelAPIError" in names:
        return (f"model {model!r} failed ({status or 'error'}: {msg}); check the upstream model server, or retry "
                "with --model warden-builtin")
    return None


def describe(e: BaseException) -> tuple[str, int] | None:
    """``(one line, exit code)`` for a failure a user can act on; None for an unexpected one (a bug)."""
    names = _names(e)
    if "ApproverNotAllowed" in names:
        from agent.settings import settings_path

        path = settings_path()
        where = f"{path} names the approvers" if path.exists() else f"no approvers are configured ({path} is absent)"
        return f"{_one_line(e)}; {where}: add `approvers: {{NAME: [oncall]}}` there", EXIT_ERROR
    if isinstance(e, WardenError):
        return _one_line(e), EXIT_ERROR
    if "PolicyError" in names:
        return f"{_one_line(e)} (check the policy files named in $WARDEN_HOME/config.yaml: policy_paths)", EXIT_ERROR
    if "GatewayError" in names:  # gateway.errors.*; ConfigError wraps a pydantic ValidationError
        cause = e.__cause__
        if cause is not None and type(cause).__name__ == "ValidationError" and hasattr(cause, "errors"):
            first = cause.errors()[0]
            head = str(e).split(": invalid ", 1)[0]
            return f"{head}: {'.'.join(map(str, first['loc'])) or '<root>'}: {_one_line(first['msg'])}", EXIT_ERROR
        return _one_line(e), EXIT_ERROR
    line = _model_error(e, names)
    if line is not None:
        return line, EXIT_ERROR
    if "UnexpectedModelBehavior" in names:
        return f"the model answered with something Warden cannot use: {_one_line(e)[:300]}", EXIT_ERROR
    if isinstance(e, OSError) and e.errno == errno.EADDRINUSE:
        return f"address already in use ({_one_line(e)}); pick another --port or stop what holds it", EXIT_ERROR
    if isinstance(e, sqlite3.DatabaseError):
        home = os.environ.get("WARDEN_HOME", "$WARDEN_HOME")
        return (f"a Warden store under {home} is not a readable SQLite database ({_one_line(e)}); "
                "`warden doctor` names the file"), EXIT_ERROR
    if isinstance(e, PermissionError):
        return f"{_one_line(e)}; check the file's owner and mode", EXIT_ERROR
    return None


def report(e: BaseException, *, expected: bool = False) -> int:
    """Print ``e`` as one ``error:`` line on stderr (with the traceback under WARDEN_DEBUG=1); its exit code.

    ``expected``: a type the caller declared as bad input, so exit 2 even when :func:`describe` does not know it.
    """
    if debug_enabled():
        traceback.print_exception(e, file=sys.stderr)
    known = describe(e) or ((_one_line(e), EXIT_ERROR) if expected else None)
    if known is None:
        line = (f"internal error: {type(e).__name__}: {_one_line(e)[:300]} (a Warden bug; WARDEN_DEBUG=1 shows "
                "the traceback)")
        code = EXIT_BUG
    else:
        line, code = known
    print_error(line)
    return code


@contextmanager
def warden_errors(extra: tuple[type[Exception], ...] = ()) -> Iterator[None]:
    """Turn a failure :func:`describe` knows (and ``extra`` types) into one line and its exit code.

    Unexpected exceptions pass through to the root command, which reports them as a bug.
    """
    try:
        yield
    except (WardenError, *extra) as e:  # type: ignore[misc]
        raise typer.Exit(report(e, expected=True)) from None
    except Exception as e:
        if describe(e) is None:
            raise
        raise typer.Exit(report(e)) from None
