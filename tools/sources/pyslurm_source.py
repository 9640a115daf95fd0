"""pyslurm source: Slurm's job and node tables read through pyslurm (the Slurm C API) instead of
running ``scontrol``.

For sites on Slurm 25.11 with pyslurm 25.11 installed (``[slurm] source = "pyslurm"`` in
warden.toml). pyslurm is imported lazily, on first fetch, so Warden runs where it is absent.
``pyslurm.Jobs.load()`` / ``pyslurm.Nodes.load()`` give Job and Node objects (attribute names
as in pyslurm 25.11: ``id``, ``name``, ``user_name``, ``state``, ``state_reason``,
``allocated_nodes``, ``time_limit`` in minutes, ``submit_time`` as a Unix timestamp, …); they are
mapped to Warden's SlurmJob/SlurmNode and rendered in ``scontrol show job|node`` key=value text, so
a live snapshot taken through pyslurm records and replays through the same parsers as one taken
with commands. Formats pyslurm does not cover here (squeue, sinfo, sacct, sdiag) go to ``fallback``.

Tested against: pyslurm-shaped objects (tests/unit/tools/sources/test_pyslurm_source.py); pyslurm
itself cannot be built on Debian 12 (Slurm 22.05 headers), so no test runs real pyslurm.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

import hostlist

from tools.errors import SourceError
from tools.models.slurm import SlurmJob, SlurmNode
from tools.sources.base import FetchRequest, RawArtifact, Source

__all__ = ["PyslurmSource", "job_from_pyslurm", "node_from_pyslurm", "render_jobs", "render_nodes"]

_NO_VALUE = ("", "None", "(null)", "N/A")


def _s(v: Any) -> str | None:
    return None if v is None or str(v) in _NO_VALUE else str(v)


def _when(ts: Any) -> datetime | None:
    """pyslurm gives Unix timestamps (int), 0/None when unset."""
    return datetime.fromtimestamp(int(ts), tz=timezone.utc) if isinstance(ts, (int, float)) and ts > 0 else None


def _nodes(expr: Any) -> list[str]:
    text = _s(expr)
    return hostlist.expand_hostlist(text) if text else []


def _gpus(gres: Any) -> int | None:
    """GPUs in a pyslurm gres dict (``{"gpu": 4}`` or ``{"gpu:a100": 4}``)."""
    if not isinstance(gres, Mapping):
        return None
    total = sum(int(n) for k, n in gres.items() if str(k).split(":")[0] == "gpu" and str(n).isdigit())
    return total or None


def job_from_pyslurm(job: Any) -> SlurmJob:
    """A pyslurm 25.11 ``Job`` (or an object with its attributes) as Warden's SlurmJob."""
    state = (_s(getattr(job, "state", None)) or "").split("+")[0].upper() or None
    per_node = _gpus(getattr(job, "gres_per_node", None))
    nodes = _nodes(getattr(job, "allocated_nodes", None))
    num_nodes = getattr(job, "num_nodes", None)
    limit = getattr(job, "time_limit", None)
    code, sig = getattr(job, "exit_code", None), getattr(job, "exit_code_signal", None)
    return SlurmJob(
        job_id=str(getattr(job, "id")), name=_s(getattr(job, "name", None)), user=_s(getattr(job, "user_name", None)),
        account=_s(getattr(job, "account", None)), partition=_s(getattr(job, "partition", None)), state=state,
        reason=_s(getattr(job, "state_reason", None)), nodes=nodes, num_nodes=num_nodes,
        num_cpus=getattr(job, "cpus", None),
        num_gpus=per_node * (num_nodes or len(nodes) or 1) if per_node else None,
        time_limit_s=limit * 60 if isinstance(limit, int) else None, elapsed_s=getattr(job, "run_time", None),
        submit_time=_when(getattr(job, "submit_time", None)), start_time=_when(getattr(job, "start_time", None)),
        end_time=_when(getattr(job, "end_time", None)), priority=getattr(job, "priority", None),
        qos=_s(getattr(job, "qos", None)),
        exit_code=f"{code}:{sig or 0}" if isinstance(code, int) else None,
        work_dir=_s(getattr(job, "working_directory", None)), stdout_path=_s(getattr(job, "standard_output", None)),
        stderr_path=_s(getattr(job, "standard_error", None)), command=_s(getattr(job, "command", None)),
        req_nodes=_nodes(getattr(job, "required_nodes", None)), exc_nodes=_nodes(getattr(job, "excluded_nodes", None)),
        reservation=_s(getattr(job, "reservation", None)), batch_host=_s(getattr(job, "batch_host", None)),
    )


def node_from_pyslurm(node: Any) -> SlurmNode:
    """A pyslurm 25.11 ``Node`` as Warden's SlurmNode (``state`` like ``IDLE+DRAIN`` → state and flags)."""
    words = (_s(getattr(node, "state", None)) or "").upper().split("+")
    gres = getattr(node, "configured_gres", None)
    return SlurmNode(
        name=str(getattr(node, "name")), state=words[0] or None, flags=[w for w in words[1:] if w],
        reason=_s(getattr(node, "reason", None)), reason_user=_s(getattr(node, "reason_user", None)),
        reason_time=_when(getattr(node, "reason_time", None)), partitions=list(getattr(node, "partitions", None) or []),
        cpus=getattr(node, "total_cpus", None), cpus_alloc=getattr(node, "allocated_cpus", None),
        cpu_load=getattr(node, "cpu_load", None), real_memory_mib=getattr(node, "real_memory", None),
        alloc_memory_mib=getattr(node, "allocated_memory", None), free_memory_mib=getattr(node, "free_memory", None),
        gres=",".join(f"{k}:{v}" for k, v in gres.items()) if isinstance(gres, Mapping) and gres else None,
        gpus_total=_gpus(gres), gpus_used=_gpus(getattr(node, "allocated_gres", None)),
        boot_time=_when(getattr(node, "boot_time", None)), last_busy_time=_when(getattr(node, "last_busy_time", None)),
        slurmd_start_time=_when(getattr(node, "slurmd_start_time", None)), version=_s(getattr(node, "slurm_version", None)),
    )


def _t(d: datetime | None) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%S") if d else "Unknown"


def _dur(s: int | None, *, unlimited: bool = False) -> str:
    if s is None:
        return "UNLIMITED" if unlimited else "00:00:00"
    d, rest = divmod(int(s), 86400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{sec:02d}"


def _clean(v: object) -> str:
    """One line: scontrol prints values verbatim, but a newline would end the record line."""
    return " ".join(str(v).splitlines()) if v is not None else "(null)"


def render_jobs(jobs: Iterable[SlurmJob]) -> str:
    """``scontrol show job`` text for the jobs (the keys Warden's parser reads)."""
    out = []
    for j in jobs:
        nodes = hostlist.collect_hostlist(j.nodes) if j.nodes else "(null)"
        tres = f"TRES=cpu={j.num_cpus or 0},node={j.num_nodes or 0}" + (f",gres/gpu={j.num_gpus}" if j.num_gpus else "")
        out.append("\n".join([
            f"JobId={j.job_id} JobName={_clean(j.name)}",
            f"   UserId={_clean(j.user)}(0) Account={_clean(j.account)} QOS={_clean(j.qos)}",
            f"   Priority={j.priority or 0}",
            f"   JobState={j.state or 'UNKNOWN'} Reason={_clean(j.reason or 'None')}",
            f"   ExitCode={j.exit_code or '0:0'}",
            f"   RunTime={_dur(j.elapsed_s)} TimeLimit={_dur(j.time_limit_s, unlimited=True)}",
            f"   SubmitTime={_t(j.submit_time)}",
            f"   StartTime={_t(j.start_time)} EndTime={_t(j.end_time)}",
            f"   Partition={_clean(j.partition)}",
            f"   ReqNodeList={hostlist.collect_hostlist(j.req_nodes) if j.req_nodes else '(null)'} "
            f"ExcNodeList={hostlist.collect_hostlist(j.exc_nodes) if j.exc_nodes else '(null)'}",
            f"   NodeList={nodes}",
            f"   BatchHost={_clean(j.batch_host)}",
            f"   NumNodes={j.num_nodes or len(j.nodes) or 1} NumCPUs={j.num_cpus or 0}",
            f"   {tres}",
            f"   Reservation={_clean(j.reservation)}",
            f"   Command={_clean(j.command)}",
            f"   WorkDir={_clean(j.work_dir)}",
            f"   StdErr={_clean(j.stderr_path)}",
            f"   StdOut={_clean(j.stdout_path)}",
        ]) + "\n")
    return "\n".join(out) if out else "No jobs in the system\n"


def render_nodes(nodes: Iterable[SlurmNode]) -> str:
    """``scontrol show node`` text for the nodes (the keys Warden's parser reads)."""
    out = []
    for n in nodes:
        lines = [
            f"NodeName={n.name} CoresPerSocket=1",
            f"   CPUAlloc={n.cpus_alloc or 0} CPUTot={n.cpus or 0} CPULoad={n.cpu_load if n.cpu_load is not None else 'N/A'}",
            f"   Gres={n.gres or '(null)'}",
            f"   RealMemory={n.real_memory_mib or 0} AllocMem={n.alloc_memory_mib or 0} FreeMem={n.free_memory_mib if n.free_memory_mib is not None else 'N/A'}",
            f"   State={'+'.join([n.state or 'UNKNOWN', *n.flags])} ThreadsPerCore=1",
            f"   Partitions={','.join(n.partitions) or '(null)'}",
            f"   BootTime={_t(n.boot_time)} SlurmdStartTime={_t(n.slurmd_start_time)}",
            f"   LastBusyTime={_t(n.last_busy_time)}",
            f"   Version={n.version or '(null)'}",
        ]
        if n.reason:
            who = f" [{n.reason_user or 'slurm'}@{_t(n.reason_time)}]"
            lines.append(f"   Reason={_clean(n.reason)}{who}")
        out.append("\n".join(lines) + "\n")
    return "\n".join(out)


class PyslurmSource:
    """A Source for ``scontrol-job-text`` and ``scontrol-node-text`` through pyslurm; others go to ``fallback``.

    Args:
        fallback: the source for formats pyslurm does not serve here (squeue/sinfo/sacct/sdiag).
        module: an already imported pyslurm-like module (tests); default: ``import pyslurm`` on first use.
    """

    name = "pyslurm"

    def __init__(self, fallback: Source | None = None, *, module: Any = None) -> None:
        self.fallback = fallback
        self._mod = module

    def _pyslurm(self) -> Any:
        if self._mod is None:
            try:
                import pyslurm  # noqa: PLC0415 - optional dependency, imported only when selected
            except ImportError as e:
                raise SourceError(f"[slurm] source = \"pyslurm\" but pyslurm cannot be imported ({e}); "
                                  "install pyslurm matching the site's Slurm, or use source = \"commands\"") from None
            self._mod = pyslurm
        return self._mod

    def fetch(self, req: FetchRequest) -> RawArtifact:
        """Load jobs or nodes through pyslurm and render them; other formats go to the fallback.

        Raises:
            SourceError: pyslurm is not importable, or its load failed (its RPCError message kept);
                or no fallback for a format pyslurm does not serve.
        """
        if req.format == "scontrol-job-text":
            text, what = render_jobs(self._load("Jobs", job_from_pyslurm)), "pyslurm.Jobs.load()"
        elif req.format == "scontrol-node-text":
            text, what = render_nodes(self._load("Nodes", node_from_pyslurm)), "pyslurm.Nodes.load()"
        elif self.fallback is not None:
            return self.fallback.fetch(req)
        else:
            raise SourceError(f"pyslurm source does not serve {req.format} and has no fallback")
        return RawArtifact(format=req.format, data=text.encode(), path=req.path or what, command=what,
                           node=req.node, job=req.job)

    def _load(self, kind: str, convert: Any) -> list[Any]:
        mod = self._pyslurm()
        try:
            table = getattr(mod, kind).load()
        except Exception as e:  # noqa: BLE001 - pyslurm raises its own RPCError (and others) from C; mapped here only
            raise SourceError(f"pyslurm.{kind}.load() failed: {type(e).__name__}: {e}") from None
        values = table.values() if isinstance(table, Mapping) else table
        return [convert(v) for v in values]

