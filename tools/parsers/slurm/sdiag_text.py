"""Parse ``sdiag`` (format id ``sdiag-text``): slurmctld scheduler and RPC statistics.

sdiag prints ``key: value`` lines in sections (the top, "Main schedule statistics
(microseconds)", "Backfilling stats"), then RPC tables, one row per message type or user:
``REQUEST_JOB_INFO  ( 2003) count:10  ave_time:276  total_time:2768``. Keys Warden does not
use are skipped; an RPC row or a known counter that does not read is a ParseError.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from tools.errors import ParseError
from tools.models.slurm import RpcStat, SdiagStats

__all__ = ["parse_sdiag_text"]

_EPOCH = re.compile(r"\((\d+)\)\s*$")
_RPC = re.compile(r"^\s*(\S+)\s*\(\s*(\d+)\)\s+count:(\d+)(?:\s+ave_time:(\d+))?(?:\s+total_time:(\d+))?\s*$")
_KV = re.compile(r"^\s*([^:]+?)\s*:\s*(.*?)\s*$")

_TOP = {
    "Server thread count": "server_thread_count", "Agent queue size": "agent_queue_size",
    "Agent count": "agent_count", "DBD Agent queue size": "dbd_agent_queue_size",
    "Jobs submitted": "jobs_submitted", "Jobs started": "jobs_started",
    "Jobs completed": "jobs_completed", "Jobs canceled": "jobs_canceled", "Jobs failed": "jobs_failed",
    "Jobs pending": "jobs_pending", "Jobs running": "jobs_running",
}
_MAIN = {
    "Last cycle": "main_last_cycle_us", "Max cycle": "main_max_cycle_us", "Mean cycle": "main_mean_cycle_us",
    "Total cycles": "main_total_cycles", "Cycles per minute": "main_cycles_per_minute",
    "Last queue length": "main_last_queue_length",
}
_BF = {
    "Total backfilled jobs (since last slurm start)": "bf_total_backfilled_jobs",
    "Total cycles": "bf_total_cycles", "Last cycle": "bf_last_cycle_us", "Max cycle": "bf_max_cycle_us",
    "Mean cycle": "bf_mean_cycle_us", "Last depth cycle": "bf_last_depth", "Last queue length": "bf_last_queue_length",
}


def parse_sdiag_text(text: str, *, path: str) -> list[SdiagStats]:
    """Parse one ``sdiag`` run into a single-element list of SdiagStats.

    Cycle times stay in microseconds; ``captured_at``, ``data_since`` and ``bf_last_cycle_when``
    come from the epoch seconds sdiag prints in parentheses (UTC).

    Raises:
        ParseError: naming path and line for an RPC row or a known counter that does not read,
            or when the text is not sdiag output at all.
    """
    fields: dict[str, object] = {}
    by_type: list[RpcStat] = []
    by_user: list[RpcStat] = []
    pending: list[RpcStat] = []
    section = "top"
    recognised = False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or set(stripped) == {"*"}:
            continue
        if stripped.startswith("sdiag output at"):
            fields["captured_at"] = _epoch(stripped, path, number)
            recognised = True
            continue
        if stripped.startswith("Data since"):
            fields["data_since"] = _epoch(stripped, path, number)
            continue
        if not line[:1].isspace():
            heading = _section_for(stripped)
            if heading is not None:
                section = heading
                if section == "pending":
                    fields["pending_rpcs"] = 0
                continue
            section = "top" if _KV.match(stripped) else "other"
        if section in {"rpc_type", "rpc_user", "pending"}:
            if section == "pending" and stripped.lower().startswith(("no pending rpcs", "pending rpcs")):
                continue
            match = _RPC.match(line)
            if not match:
                if section == "pending":
                    continue  # "Pending RPCs" lists follow as free text in some versions
                raise ParseError(path, number, f"bad RPC row {stripped[:60]!r}")
            try:
                stat = RpcStat(
                    name=match.group(1), id=int(match.group(2)), count=int(match.group(3)),
                    ave_time_us=_opt(match.group(4)), total_time_us=_opt(match.group(5)),
                )
            except ValueError:  # a number too long to be a counter
                raise ParseError(path, number, f"bad RPC row {stripped[:60]!r}") from None
            {"rpc_type": by_type, "rpc_user": by_user, "pending": pending}[section].append(stat)
            continue
        kv = _KV.match(line)
        if not kv:
            continue
        key, value = kv.group(1), kv.group(2)
        table = {"top": _TOP, "main": _MAIN, "bf": _BF}.get(section, {})
        if section == "bf" and key == "Last cycle when":
            fields["bf_last_cycle_when"] = _epoch(value, path, number) if _EPOCH.search(value) else None
            continue
        name = table.get(key)
        if name is None:
            continue
        recognised = True
        try:
            fields[name] = int(value.split()[0])
        except (ValueError, IndexError):
            raise ParseError(path, number, f"{key}: expected an integer, got {value[:40]!r}") from None
    if not recognised:
        raise ParseError(path, None, "not sdiag output (no 'sdiag output at' or counters)")
    if pending:
        fields["pending_rpcs"] = sum(s.count for s in pending)
    return [SdiagStats(rpcs_by_type=by_type, rpcs_by_user=by_user, **fields)]  # type: ignore[arg-type]


def _section_for(line: str) -> str | None:
    """The section a column-0 heading opens, or None when the line is not a heading."""
    lower = line.lower()
    for prefix, section in (
        ("main schedule statistics", "main"),
        ("backfilling stats", "bf"),
        ("remote procedure call statistics by message type", "rpc_type"),
        ("remote procedure call statistics by user", "rpc_user"),
        ("pending rpc statistics", "pending"),
        ("main scheduler exit", "other"),
        ("backfill exit", "other"),
        ("pending rpcs", "other"),
    ):
        if lower.startswith(prefix):
            return section
    return None


def _epoch(text: str, path: str, number: int) -> datetime:
    match = _EPOCH.search(text)
    if not match:
        raise ParseError(path, number, f"expected '(epoch seconds)' in {text[:60]!r}")
    try:
        return datetime.fromtimestamp(int(match.group(1)), tz=timezone.utc)
    except (ValueError, OverflowError, OSError):
        raise ParseError(path, number, f"epoch out of range in {text[:60]!r}") from None


def _opt(text: str | None) -> int | None:
    return int(text) if text is not None else None
