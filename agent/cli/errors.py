"""Turning Warden errors into one line and exit code 2 (no traceback)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console

from tools.errors import WardenError

__all__ = ["warden_errors", "err_console", "EXIT_ERROR"]

EXIT_ERROR = 2
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


@contextmanager
def warden_errors(extra: tuple[type[Exception], ...] = ()) -> Iterator[None]:
    """Print ``error: <message>`` for WardenError (and ``extra`` types) and exit 2."""
    try:
        yield
    except (WardenError, *extra) as e:  # type: ignore[misc]
        err_console.print(f"error: {' '.join(str(e).split())}", markup=False)
        raise typer.Exit(EXIT_ERROR) from None


