"""Parsing a large cluster's artifacts in a second process while this one parses the rest (performance only).

At 10,000 nodes the Slurm command outputs (``scontrol show job`` alone is 40 MB, 34,000 records) and the
nodes' kernel logs take about as long to parse as the nodes' DCGM pages. They are independent, so on a
machine with two or more CPUs one forked worker parses them while this process parses the DCGM pages;
the worker's records come back pickled and are used in the artifacts' order, so the facts are exactly
those of parsing in-process. Small snapshots (every bundled incident, every test fixture) never start
the worker: only an artifact of ``MIN_BYTES`` (512 KB) or more of a format in ``HEAVY_FORMATS`` does.

Whatever goes wrong on the worker's side (a parse error, a record or exception that does not pickle, a
worker that died or does not answer in ``TIMEOUT_S``) is answered by parsing that artifact here again, so
what a file yields, or the error it raises, is always what ``parse_artifact`` gives in this process.
Linux's ``fork`` start method only (no re-import of Warden in the worker; elsewhere nothing is offloaded).
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from pydantic import BaseModel

from tools.parsers import parse_artifact
from tools.sources.base import RawArtifact

__all__ = ["Offload", "HEAVY_FORMATS", "BATCH_FORMATS", "MIN_BYTES", "START_BYTES", "BATCH_BYTES"]

HEAVY_FORMATS = frozenset({"scontrol-job-text", "scontrol-node-text", "sacct-text", "sacct-json", "squeue-text",
                           "squeue-json", "sinfo-json", "lctl-job-stats"})
"""Formats whose one large file is parsed in the worker (few records per byte: cheap to send back)."""
BATCH_FORMATS = frozenset({"kernel-log"})
"""Formats of many small files (one per node), sent to a started worker in batches."""
MIN_BYTES = 512 << 10
"""An artifact of a heavy format at least this large starts the worker when a CPU is free (``_spare_cpu``):
1,000 nodes print an 0.8 MB ``scontrol show node`` (the first Slurm file of a snapshot), where the worker
halves the facts' wall time on two free cores but costs wall time when it must share a busy one (bench/README.md,
fifth pass); one of ``START_BYTES`` or more starts it whatever the load. 100 nodes (80 KB) and the largest bundled incident's file (under 100 KB) stay in process."""
START_BYTES = 12 * MIN_BYTES
"""A heavy-format artifact this large (6 MB) starts the worker whatever the load: 10,000 nodes print an 8 MB
``scontrol show node`` first (parsed here on a busy machine before, 0.7 s of this process) and a 43 MB
``scontrol show job``; 1,000 nodes' largest file (4 MB) stays under it."""
BATCH_BYTES = 1 << 20
"""Bytes of batch-format files sent to the worker as one task."""
TIMEOUT_S = 300.0
"""Seconds to wait for one task's records before parsing it here instead."""


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _spare_cpu() -> bool:
    """True when the 1-minute load average leaves at least half a CPU besides this process's own."""
    try:
        return os.getloadavg()[0] < _cpus() - 0.5
    except OSError:  # no load average: assume the machine is ours
        return True


_Packed = tuple[list[type], list[frozenset[str]], list[tuple[Any, ...]]]
"""Records as plain rows: the classes, the field-set variants, and per record (class index, field-set
index, the field values in __dict__ order, __pydantic_extra__, __pydantic_private__)."""


def _pack(records: list[BaseModel]) -> _Packed:
    """Records as rows that pickle without pydantic's per-object reduce (several times cheaper both ways)."""
    classes: dict[type, int] = {}
    sets: dict[frozenset[str], int] = {}
    rows = []
    last_set: set[str] | None = None
    last_index = -1
    for rec in records:
        cls = type(rec)
        c = classes.get(cls)
        if c is None:
            c = classes[cls] = len(classes)
        fields = rec.__pydantic_fields_set__
        if fields != last_set:  # a parser's records mostly set the same fields: one frozenset per run of them
            last_set = fields
            last_index = sets.setdefault(frozenset(fields), len(sets))
        rows.append((c, last_index, tuple(rec.__dict__.values()), rec.__pydantic_extra__, rec.__pydantic_private__))
    return list(classes), list(sets), rows


def _unpack(packed: _Packed) -> list[BaseModel]:
    """The records ``_pack`` was given (same classes, field values, fields set, extra and private parts)."""
    classes, sets, rows = packed
    names = [tuple(cls.model_fields) for cls in classes]
    field_sets = [set(fs) for fs in sets]
    new, setattr_ = object.__new__, object.__setattr__
    out: list[BaseModel] = []
    for c, f, values, extra, private in rows:
        m = new(classes[c])
        setattr_(m, "__dict__", dict(zip(names[c], values)))
        setattr_(m, "__pydantic_fields_set__", set(field_sets[f]))
        setattr_(m, "__pydantic_extra__", extra)
        setattr_(m, "__pydantic_private__", private)
        out.append(m)
    return out


def _parse_all(arts: list[RawArtifact]) -> list[_Packed | None]:
    """Worker side: each artifact's records (packed), or None where parsing raised or a record is not a
    plain model (the caller then parses that artifact again itself)."""
    out: list[_Packed | None] = []
    names: dict[type, tuple[str, ...]] = {}
    for art in arts:
        try:
            records = parse_artifact(art)
            out.append(_pack(records) if _plain(records, names) else None)
        except Exception:  # noqa: BLE001 - the caller parses it again and gets the real error
            out.append(None)
    return out


def _plain(records: list[BaseModel], names: dict[type, tuple[str, ...]]) -> bool:
    """True when every record's ``__dict__`` holds exactly its class's fields, in their order (what ``_unpack``
    rebuilds); ``names`` caches each class's field names (``model_fields`` is a descriptor: costly per record)."""
    for rec in records:
        cls = type(rec)
        want = names.get(cls)
        if want is None:
            want = names[cls] = tuple(cls.model_fields)
        if tuple(rec.__dict__) != want:
            return False
    return True


class Offload:
    """At most one worker process and the tasks sent to it; results are asked for in artifact order.

    Use: ``wants`` (would this artifact go to the worker?), ``submit`` (returns a ticket), ``ready`` and
    ``records`` (the artifact's records, or what ``parse_artifact`` raises), then ``close``.
    """

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._broken = False
        self._batch: list[RawArtifact] = []
        self._batch_bytes = 0
        self._batch_future: Future[list[Any]] | None = None
        self._sent: list[Future[list[Any]]] = []
        self._sizes: dict[Future[list[Any]], int] = {}  # bytes of the artifacts of each task sent
        self._usable = _cpus() >= 2 and "fork" in multiprocessing.get_all_start_methods()

    def wants(self, art: RawArtifact) -> bool:
        """True when ``art`` goes to the worker: a large heavy-format file, or a batch-format file once
        the worker runs and while it has nothing else to do (so that neither process waits long for
        the other: this one parses the batch-format files the worker is not free for)."""
        if not self._usable or self._broken:
            return False
        if art.format in HEAVY_FORMATS:  # once it runs, the cluster's other large Slurm outputs go there too
            size = len(art.data)
            if self._pool is not None:
                # ...but one under START_BYTES while the worker has four times it queued still is parsed here: it
                # costs no packing, pickling and unpacking of its records, and the kernel logs the worker then
                # takes instead balance the two processes (10,000 nodes: squeue's 33,000 jobs behind 51 MB of
                # scontrol output)
                return size >= START_BYTES or (size >= MIN_BYTES // 8 and self._queued() < 4 * size)
            return size >= START_BYTES or (size >= MIN_BYTES and _spare_cpu())
        if art.format not in BATCH_FORMATS or self._pool is None:
            return False
        return bool(self._batch) or all(f.done() for f in self._sent)

    def submit(self, art: RawArtifact) -> tuple[Future[list[Any]] | None, int, RawArtifact]:
        """Send ``art`` to the worker (batch formats are sent when their batch is full, or on ``flush``);
        the ticket is for ``records``."""
        if self._pool is None:
            try:
                self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
            except Exception as e:  # noqa: BLE001 - no worker: this artifact (and the rest) are parsed here
                self._broken = True
                return (_failed(e), 0, art)
        if art.format in BATCH_FORMATS:
            if self._batch_future is None:
                self._batch_future = Future()
            ticket = (self._batch_future, len(self._batch), art)
            self._batch.append(art)
            self._batch_bytes += len(art.data)
            if self._batch_bytes >= BATCH_BYTES:
                self.flush()
            return ticket
        return (self._send([art]), 0, art)

    def flush(self) -> None:
        """Send the batch being gathered."""
        if not self._batch or self._batch_future is None:
            return
        waiting, batch = self._batch_future, self._batch
        self._batch, self._batch_bytes, self._batch_future = [], 0, None
        sent = self._send(batch)
        sent.add_done_callback(lambda f: _relay(f, waiting))

    def _send(self, arts: list[RawArtifact]) -> Future[list[Any]]:
        assert self._pool is not None
        try:
            sent = self._pool.submit(_parse_all, arts)
            self._sent = [f for f in self._sent if not f.done()] + [sent]
            self._sizes = {f: self._sizes.get(f, 0) for f in self._sent}
            self._sizes[sent] = sum(len(a.data) for a in arts)
            return sent
        except Exception as e:  # noqa: BLE001 - a broken pool: these are parsed here
            self._broken = True
            return _failed(e)

    def _queued(self) -> int:
        """Bytes of the tasks sent that the worker has not finished."""
        return sum(n for f, n in self._sizes.items() if not f.done())

    @staticmethod
    def ready(ticket: tuple[Future[list[Any]] | None, int, RawArtifact]) -> bool:
        """True when ``records`` would not wait."""
        return ticket[0] is None or ticket[0].done()

    def records(self, ticket: tuple[Future[list[Any]] | None, int, RawArtifact]) -> list[BaseModel]:
        """The records of the ticket's artifact, as ``parse_artifact`` gives them in this process.

        Raises:
            whatever ``parse_artifact`` raises for that artifact (it is then parsed here).
        """
        future, index, art = ticket
        if future is self._batch_future:
            self.flush()
        found: _Packed | None = None
        if future is not None:
            try:
                found = future.result(timeout=TIMEOUT_S)[index]
            except Exception:  # noqa: BLE001 - died, timed out, did not pickle: parsed here
                self._broken = True
        return _unpack(found) if found is not None else parse_artifact(art)

    def close(self, *, wait: bool = True) -> None:
        """Stop the worker (tasks not asked for are dropped); without ``wait`` (or when it stopped
        answering) it is terminated rather than waited for."""
        if self._pool is not None:
            if self._broken or not wait:
                for proc in list((getattr(self._pool, "_processes", None) or {}).values()):
                    proc.terminate()
            self._pool.shutdown(wait=wait and not self._broken, cancel_futures=True)
            self._pool = None


def _failed(e: BaseException) -> Future[list[Any]]:
    failed: Future[list[Any]] = Future()
    failed.set_exception(e)
    return failed


def _relay(done: Future[list[Any]], waiting: Future[list[Any]]) -> None:
    if done.cancelled():
        waiting.cancel()
    elif done.exception() is not None:
        waiting.set_exception(done.exception())  # type: ignore[arg-type]
    else:
        waiting.set_result(done.result())
