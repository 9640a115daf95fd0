"""What a short-lived `warden` process skips: the garbage collector while it imports, the teardown at exit.

And numpy for sqlite-utils. All three are measured in bench/startup.py (issue 10). Importing the
agent stack makes some 110,000 long-lived objects (modules, classes, pydantic schemas), and the cyclic
collector scans them again and again while they are being made (~0.15 s of CPU); at exit the
interpreter tears every module down and collects again (~0.5 s); sqlite-utils imports numpy (and
pandas) when installed, only to map their scalar types to column types (~0.15 s and OpenBLAS's
threads), and Warden stores no numpy value. None of it changes what a command does or prints.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType

__all__ = ["import_phase", "exit_process", "short_lived"]

_short_lived = False


class _NoArraysForSqliteUtils:
    """A meta-path finder that refuses numpy and pandas to sqlite_utils.db's optional imports only.

    sqlite-utils then maps no numpy/pandas scalar type to a column type (Warden inserts none);
    any other importer of numpy (``warden report``'s matplotlib) gets it as usual.
    """

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name in ("numpy", "pandas"):
            frame = sys._getframe(1)
            for _ in range(12):  # importlib's own frames, then import_module's caller
                if frame is None:
                    break
                if frame.f_globals.get("__name__") == "sqlite_utils.db":
                    raise ModuleNotFoundError(f"No module named {name!r} (not imported for sqlite-utils)", name=name)
                frame = frame.f_back
        return None


def short_lived() -> None:
    """Mark this process as the console script's (agent.cli.app.main): :func:`import_phase` acts from now
    on, and sqlite-utils is imported without numpy.

    Elsewhere (``CliRunner`` in a test session, a library caller) imports go as usual: a long
    process that freezes its objects again and again would keep its garbage too.
    """
    global _short_lived
    if not _short_lived:
        sys.meta_path.insert(0, _NoArraysForSqliteUtils())
    _short_lived = True


@contextmanager
def import_phase() -> Iterator[None]:
    """Import with the cyclic collector paused; afterwards freeze what was made and collect as before.

    Imports make long-lived objects, not garbage: pausing costs no memory that a collection would
    free. ``gc.freeze()`` moves them to the permanent generation, so later collections (a long
    ``warden eval`` makes many) do not scan them. Nested, already paused, or outside the console
    script (see :func:`short_lived`): does nothing.
    """
    if not _short_lived or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _status(code: object) -> int:
    """The exit status ``SystemExit(code)`` gives: None is 0, an int itself, anything else printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def exit_process(code: object) -> None:
    """End the process as ``sys.exit(code)`` would, without tearing the interpreter down.

    Runs what an exit runs that has an effect: the ``atexit`` callbacks (the audit log's flush,
    logging's shutdown, multiprocessing's children) and the flush of stdout and stderr; then
    ``os._exit``. Falls back to ``sys.exit(code)`` (the full teardown) when another non-daemon
    thread is still running, which the interpreter would wait for, or when a flush fails (a closed
    pipe), so that Python reports it as it always does. Returns only by raising SystemExit.
    """
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if others:
        raise SystemExit(code)
    atexit._run_exitfuncs()
    status = _status(code)
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None and not stream.closed:
                stream.flush()
    except (OSError, ValueError):
        raise SystemExit(code) from None
    os._exit(status)
