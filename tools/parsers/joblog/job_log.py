"""Parser for job stdout/stderr (format job-log): NCCL, PyTorch, CUDA and Slurm events.

Lines may carry a launcher rank prefix (``[rank3]:`` from PyTorch >= 2.2, ``3: `` from
``srun --label``, ``[1,3]<stderr>:`` from ``mpirun --tag-output``); otherwise the rank comes from
``[Rank 3]`` / ``[PG 1 Rank 3]`` in the text. Multi-line shapes handled:

* Python tracebacks (one event per ``Traceback (most recent call last):``, typed by its final
  line; interleaved ranks are tracked separately when prefixed);
* the NCCL watchdog timeout printed over several lines (NCCL-01 in public-incidents.md)::

      [Rank 0] Watchdog caught collective operation timeout:
        WorkNCCL(..., OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000)
        ran for 1800090 milliseconds before timing out.

Everything else is classified line by line (tools.parsers.joblog.job_log_lines). Only the last
training-progress line is kept, and one JobLogSummary closes the list. A line is the unit: a file
cut mid-line is parsed as far as it goes. Real shapes: see tests/fixtures/job-log/SOURCES.md.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from datetime import datetime

from tools.models.logs import JobLogEventBase, JobLogSummary, NcclRemoteErrorEvent, make_job_log_event
from tools.parsers.joblog._prefilter import Gates
from tools.parsers.joblog.rates import global_batch, time_signal
from tools.parsers.joblog.job_log_lines import (
    classify,
    exception_type,
    find_timestamp,
    line_host,
    prefix_host,
    parse_watchdog,
    progress_fields,
    rank_in_text,
    split_rank,
)

__all__ = ["parse_job_log", "MAX_MESSAGE", "MAX_EVENTS_PER_KIND"]

MAX_MESSAGE = 500
MAX_EVENTS_PER_KIND = 200
"""Events kept per kind and file; the summary counts every event seen, kept or not."""
MAX_CHECKPOINTS_KEPT = 20
"""Saved-checkpoint events kept per file (the newest)."""

_WATCHDOG = re.compile(r"Watchdog caught collective operation timeout")
_WATCHDOG_CONT = re.compile(r"^(?:WorkNCCL\(|ran for \d+ milliseconds)")
_CARETS = re.compile(r"^[\^~ ]+$")
_FINAL_FALLBACK = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s(?P<msg>.*))?$")
_MAX_TRACEBACK_LINES = 500
_MAX_ANALYZED = 4096  # characters of a line that are classified; real messages are far shorter
_RDZV_STORE = re.compile(r"Process \d+ hosts the TCP store for the C10d rendezvous backend")
_HOST_LABEL = re.compile(r"^\[(?P<host>[A-Za-z][\w-]{0,62}\d[\w.-]{0,20})\] ")
"""A per-host label a launcher puts before each line (``[ln09] Traceback ...``: pdsh/clush style, or a wrapper's
``sed "s/^/[$(hostname)] /"``): several hosts' tracebacks interleave, each is read on its own."""
_ALL = Gates(True, True, True, True)


_RESUMING = re.compile(
    r"(?:restoring states from the checkpoint path at|resum(?:ing|e) (?:training )?from (?:(?:the )?(?:latest|last|newest) )?(?:dcp |sharded )?(?:checkpoint:? )?|"
    r"loading (?:checkpoint|state dict|weights) (?:from )?|loading checkpoint shards from )\s*['\"]?(?P<path>/[^\s'\",]+)",
    re.IGNORECASE)
"""A resume naming the checkpoint it loads (Lightning's ``Restoring states from the checkpoint path at``,
HF Trainer's ``Resuming training from checkpoint``, ``Loading checkpoint from``)."""
_RESUMED = re.compile(r"continuing training from checkpoint|resum(?:ing|ed) (?:training )?from (?:the )?(?:latest |last )?"
                      r"checkpoint|restoring states from the checkpoint|resumed from checkpoint", re.IGNORECASE)
"""Any line saying the job resumed from a checkpoint, whether or not it names the path."""
_LINK_TARGET = re.compile(r"\s+->\s+(?P<path>/[^\s'\",]+)")
"""``latest -> /ckpt/step_038000`` after it: the file actually read."""


_NO_SUCH_FILE = re.compile(r"No such file or directory: ['\"](?P<path>/[^'\"]{1,500})['\"]")


def _missing_in(line: str, loading: str) -> str | None:
    """The file a ``No such file or directory: '…'`` line names when it lies in the checkpoint being loaded
    (the same step directory or its parent: a shard the save never wrote)."""
    m = _NO_SUCH_FILE.search(line)
    if m is None:
        return None
    missing = m["path"]
    root = loading.rsplit("/", 2)[0] if loading.count("/") > 3 else loading
    return missing if missing.startswith(root.rstrip("/") + "/") else None


def _cap(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _typed(kind: str, fields: dict[str, str], **base: object) -> JobLogEventBase:
    """The typed event of ``kind``; the printing host is read from the line when the classifier did not."""
    values: dict[str, object] = {**fields, **base}
    if values.get("host") is None:
        values["host"] = line_host(str(base.get("message", "")))
    return make_job_log_event(kind, **values)


class _Traceback:
    """One Python traceback being read, from its ``Traceback (most recent call last):`` line."""

    def __init__(self, line: int, rank: int | None, ts: datetime | None) -> None:
        self.line, self.rank, self.ts = line, rank, ts
        self.after_file = False
        self.count = 0

    def feed(self, text: str) -> tuple[bool, tuple[str, str] | None]:
        """(line consumed as frame/code, (exception type, final line) when this line ends it)."""
        self.count += 1
        if text.startswith('File "'):
            self.after_file = True
            return True, None
        if self.after_file or _CARETS.match(text):
            self.after_file = False
            if exception_type(text) is None:
                return True, None  # source line (or ^^^^ markers) of the frame above
        exc = exception_type(text)
        if exc is not None:
            return False, (exc, text)
        m = _FINAL_FALLBACK.match(text)
        if m and (m["msg"] is not None or text[:1].isupper()):
            return False, (m["type"], text)
        return True, None


_TB = "Traceback (most recent call last)"
_LOG_PREFIX = re.compile(r"^[\w\[\]:.,/ +-]{0,60}?(?:ERROR|CRITICAL|WARNING|INFO|DEBUG)\b[\]:|\s-]*$")


def _traceback_start(text: str) -> bool:
    """A traceback's first line, bare or behind a logging prefix (``ERROR:    Traceback ...``)."""
    idx = text.find(_TB)
    return idx == 0 or (0 < idx <= 80 and bool(_LOG_PREFIX.match(text[:idx])))


class _Watchdog:
    """An NCCL watchdog timeout message whose WorkNCCL(...) / ran-for parts follow on next lines."""

    def __init__(self, line: int, rank: int | None, ts: datetime | None, text: str) -> None:
        self.line, self.rank, self.ts, self.parts = line, rank, ts, [text]

    def complete(self) -> bool:
        return "before timing out" in self.parts[-1] or len(self.parts) >= 3


def _median_gap_s(times: deque[datetime]) -> float | None:
    """The median seconds between consecutive times (None with fewer than three times)."""
    if len(times) < 3:
        return None
    ordered = list(times)
    gaps = sorted((b - a).total_seconds() for a, b in zip(ordered, ordered[1:]))
    return gaps[len(gaps) // 2]


def parse_job_log(text: str, *, path: str, job: str | None = None,
                  prefilter: bool = True) -> list[JobLogEventBase | JobLogSummary]:
    """Parse a job's stdout/stderr (format job-log).

    Args:
        text: the log text.
        path: snapshot-relative path; events carry it with their 1-based line number.
        job: the manifest's job id, copied onto events and the summary.
        prefilter: skip the per-line readers a line holds no word for (tools.parsers.joblog._prefilter;
            same result, faster); False runs every reader on every line (what its test compares with).

    Returns the events in file order followed by exactly one JobLogSummary (line count, last
    timestamp, last training step, event counts). Event kinds and their fields:
    ``nccl_timeout`` (op, numel, numel_out, timeout_ms, ran_for_ms, seq; one per rank and
    collective), ``nccl_remote_error`` (peer, port, status, vendor, host), ``nccl_error``,
    ``cuda_oom`` (tried/total/allocated/reserved/free_gib, gpu), ``cuda_error`` (error),
    ``traceback`` (exception_type; message = final line), ``checkpoint_write_failure``,
    ``checkpoint_load_failure``, ``nan_loss`` (metric, value, step), ``enospc`` (error ENOSPC or
    EDQUOT), ``slurm_message`` (what, id, node, state, at, reason / tasks, status, exit_code /
    oom_kill_events), ``checkpoint_saved`` (path, step; the last MAX_CHECKPOINTS_KEPT only) and
    ``progress`` (step, loss, epoch as printed; the last one only). Messages are capped
    at 500 characters. Never raises on content.
    """
    events: list[JobLogEventBase] = []
    seen = Counter[str]()
    rdzv_stores = 0
    tracebacks: dict[int | str | None, _Traceback] = {}
    watchdogs: dict[int | str | None, _Watchdog] = {}
    timeouts: set[tuple[object, ...]] = set()
    progress: JobLogEventBase | None = None
    hosts: dict[str, None] = {}
    saved: deque[JobLogEventBase] = deque(maxlen=MAX_CHECKPOINTS_KEPT)
    last_ts: datetime | None = None
    recent: deque[datetime] = deque(maxlen=11)  # the newest distinct times printed: the log's own cadence
    untimed_progress = 0
    loading: str | None = None  # the checkpoint a resume said it is loading: what a load failure is about
    resumed = False
    batch_size: int | None = None
    signal: str | None = None

    def emit(kind: str, line: int, rank: int | None, ts: datetime | None, message: str,
             exc: str | None = None, fields: dict[str, str] | None = None) -> None:
        seen[kind] += 1
        last = events[-1] if events else None
        if (kind == "nccl_remote_error" and isinstance(last, NcclRemoteErrorEvent)
                and (rank is None or last.rank == rank) and line - last.line <= 4):
            more = _typed(kind, fields or {}, job=job, file=path, line=line, rank=rank, message=_cap(message))
            for name in ("peer", "port", "status", "vendor", "version", "host"):
                if getattr(last, name) is None:  # one remote error printed over several lines
                    setattr(last, name, getattr(more, name))
            seen[kind] -= 1
            return
        if kind == "checkpoint_load_failure" and loading and not (fields or {}).get("path"):
            fields = {**(fields or {}), "path": loading}
        if kind == "checkpoint_saved":  # the newest saves matter: keep the last few, not the first
            saved.append(_typed(kind, fields or {}, job=job, file=path, line=line, rank=rank, timestamp=ts,
                                message=_cap(message)))
            return
        if seen[kind] > MAX_EVENTS_PER_KIND:
            return
        events.append(_typed(kind, fields or {}, job=job, file=path, line=line, rank=rank, timestamp=ts,
                             exception_type=exc, message=_cap(message)))

    def finish_watchdog(w: _Watchdog) -> None:
        joined = " ".join(w.parts)
        fields = parse_watchdog(joined)
        key = (w.rank, fields.get("seq"), fields.get("op"), fields.get("timeout_ms"))
        if key in timeouts:
            return  # the same timeout repeated (e.g. in "terminate called ... what():")
        timeouts.add(key)
        emit("nccl_timeout", w.line, w.rank, w.ts, joined, None, fields)

    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        prefix_rank, message = split_rank(raw[:_MAX_ANALYZED])
        prefix_host_name = None
        if prefix_rank is None and raw[:1] == "[" and (labelled := _HOST_LABEL.match(message)) is not None:
            prefix_host_name, message = labelled["host"], message[labelled.end():]
        stripped = message.strip()
        if len(hosts) < 1024 and ":" in stripped[:70] and (host := prefix_host(stripped)) is not None:
            hosts[host] = None
        ts = find_timestamp(stripped)
        if ts is not None and (last_ts is None or ts > last_ts):
            last_ts = ts  # the newest time printed: lines written out of order (an async save's) do not rewind it
            recent.append(ts)
        if ts is not None:
            untimed_progress = 0
        elif "loss" in stripped:  # training progress printed without a time (HF's {'loss': ...} dicts)
            untimed_progress += 1
        rank = prefix_rank if prefix_rank is not None else rank_in_text(stripped)
        key: int | str | None = prefix_rank if prefix_host_name is None else prefix_host_name

        pending = watchdogs.get(key)
        if pending is not None:
            if _WATCHDOG_CONT.match(stripped):
                pending.parts.append(stripped)
                if pending.complete():
                    finish_watchdog(watchdogs.pop(key))
                continue
            finish_watchdog(watchdogs.pop(key))

        tb = tracebacks.get(key)
        if tb is not None:
            consumed, final = tb.feed(stripped)
            if final is not None or tb.count > _MAX_TRACEBACK_LINES:
                exc, last_line = final if final is not None else (None, "Traceback (most recent call last): (too long)")
                emit("traceback", tb.line, tb.rank, tb.ts, last_line, exc)
                del tracebacks[key]
            if consumed:
                continue
        if _traceback_start(stripped):
            tracebacks[key] = _Traceback(lineno, rank, ts)
            continue

        if _WATCHDOG.search(stripped):
            w = _Watchdog(lineno, rank, ts, stripped)
            if "before timing out" in stripped:
                finish_watchdog(w)
            else:
                watchdogs[key] = w
            continue

        if "hosts the TCP store" in stripped and _RDZV_STORE.search(stripped):
            rdzv_stores += 1
        gates = Gates.of(stripped) if prefilter else _ALL
        if gates.batch and (batch := global_batch(stripped)) is not None:
            batch_size = batch
        if gates.batch and signal is None:
            signal = time_signal(stripped)
        if gates.resume and not resumed and _RESUMED.search(stripped):
            resumed = True
        if gates.resume and (resume := _RESUMING.search(stripped)) is not None:
            # "resuming from /ckpt/step_26000": a resume of the run, though the word checkpoint is not printed
            resumed = resumed or resume.group(0)[:6].lower() in ("resumi", "resume", "restor")
            target = _LINK_TARGET.search(stripped, resume.end())  # "latest -> step_038000": the file read
            loading = (target["path"] if target else resume["path"])[:500]
        found = classify(stripped) if gates.classify else []
        for kind, exc, fields in found:
            emit(kind, lineno, rank, ts, stripped, exc, fields)
        if loading and found and (missing := _missing_in(stripped, loading)) is not None:
            emit("checkpoint_load_failure", lineno, rank, ts, stripped, "FileNotFoundError", {"path": missing})
        if gates.progress and all(kind == "nan_loss" for kind, _, _ in found):
            fields = progress_fields(stripped)
            if fields is not None:
                progress = _typed("progress", fields, job=job, file=path, line=lineno, rank=rank, timestamp=ts,
                                  message=_cap(stripped))

    for w in watchdogs.values():
        finish_watchdog(w)
    for tb in tracebacks.values():
        emit("traceback", tb.line, tb.rank, tb.ts, "Traceback (most recent call last): (cut off before its last line)")
    if progress is not None:
        seen["progress"] += 1
        events.append(progress)
    events.extend(saved)
    events.sort(key=lambda e: e.line)
    summary = JobLogSummary(
        job=job, file=path, lines=len(text.splitlines()), last_timestamp=last_ts,
        last_step=getattr(progress, "step", None), resumed=resumed, global_batch=batch_size, time_signal=signal, untimed_progress_after=untimed_progress,
        events=len(events),
        kinds=dict(seen),
        hosts=list(hosts), rdzv_stores=rdzv_stores, interval_s=_median_gap_s(recent),
    )
    return [*events, summary]
