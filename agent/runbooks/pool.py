"""A bounded worker pool: at most ``workers`` jobs run and ``max_pending`` wait; more are refused.

Diagnoses are CPU-bound and every front end shares the machine, so no front end starts work without
a bound: a submit beyond the cap returns False at once (the caller says so where the request came
from) instead of queueing without limit.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["BoundedPool"]

log = logging.getLogger("warden.pool")


class BoundedPool:
    """``workers`` threads; ``max_pending`` jobs queued or running at most."""

    def __init__(self, workers: int = 2, max_pending: int = 16, *, name: str = "warden") -> None:
        if workers < 1 or max_pending < workers:
            raise ValueError("workers must be >= 1 and max_pending >= workers")
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._slots = threading.BoundedSemaphore(max_pending)
        self.refused = 0
        """Jobs refused because the pool was full."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any] | None:
        """Run ``fn(*args)`` on a worker; None (and ``refused`` + 1) when the pool is full."""
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            return None
        try:
            fut = self._pool.submit(fn, *args)
        except RuntimeError:  # shut down
            self._slots.release()
            return None
        fut.add_done_callback(self._done)
        return fut

    def _done(self, fut: Future[Any]) -> None:
        self._slots.release()
        exc = fut.exception()
        if exc is not None:
            log.error("worker job failed: %s: %s", type(exc).__name__, exc, exc_info=exc)

    def shutdown(self, wait: bool = True) -> None:
        """Stop taking jobs; with ``wait``, let the running and queued ones finish."""
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
