"""Parser for kernel and system logs: `dmesg`, `dmesg -T`, `dmesg -x`, `journalctl` (-k or any unit),
syslog files, GPFS mmfs.log (format kernel-log).

Prefixes are those of tools.parsers.kernel._prefix. Events (tools.models.logs.KernelEvent): NVRM Xids,
lost GPUs (the multi-line "fallen off the bus" message joined into one event), NVRM ECC and driver
errors, GPU-stack daemons (Fabric Manager, persistenced, DCGM, container toolkit), Lustre/LNet, GPFS /
NFS / BeeGFS client events, OOM kills (the ``oom-kill:`` and ``Killed process`` lines of one kill
merge), InfiniBand and Ethernet link changes, PCIe AER, hung tasks, slurmd/slurmstepd/SPANK errors.
Any other line that is error-level (printed priority err or worse, or error words when no priority is
printed, minus known benign noise) is kept as a ``generic`` event; the rest are not events. A line
is the unit, so a file cut mid-line parses as far as it goes. Real shapes: NVIDIA Xid docs,
NVSentinel#155 / gpud#1209, Lustre manual, IBM Spectrum Scale problem determination guide, kernel
OOM and NFS messages (see tests/fixtures/kernel-log/SOURCES.md).
"""

from __future__ import annotations

import re
from functools import lru_cache

from tools.models.logs import KernelEventBase, OomKillEvent, make_kernel_event
from tools.parsers.kernel._gpu import FALLEN_START, classify_gpu, classify_gpu_stack, normalize_pci
from tools.parsers.kernel._host import classify_host_fault, classify_hung, classify_oom, classify_slurm_node, error_level
from tools.parsers.kernel._net import classify_link, classify_pcie
from tools.parsers.kernel._prefilter import candidate_lines
from tools.parsers.kernel._prefix import split_prefix
from tools.parsers.kernel._storage import classify_fs_client, classify_lustre

__all__ = ["parse_kernel_log", "normalize_pci", "MAX_MESSAGE", "MAX_GENERIC"]

MAX_MESSAGE = 500
MAX_GENERIC = 200
"""Generic (unclassified error-level) events kept per file; a flood of one error is one signal."""
_MAX_ANALYZED = 4096  # characters of a line that are classified; real messages are far shorter

_SEVERE = {"xid": "err", "fallen_off_bus": "crit", "gpu_ecc": "err", "gpu_driver": "err", "oom_kill": "err",
           "hung_task": "err", "slurm_node": "err", "gpu_stack": "err", "host_fault": "err", "generic": "err"}


def _cap(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


class _Group:
    """A multi-line NVRM "The NVIDIA GPU … has fallen off the bus" message being collected."""

    def __init__(self, lineno: int, ts: str | None, host: str | None, msg: str) -> None:
        self.lineno, self.ts, self.host, self.parts = lineno, ts, host, [msg]

    def takes(self, msg: str, continuation: bool) -> bool:
        if len(self.parts) >= 4 or self.parts[-1].endswith("."):
            return False
        if continuation:
            return True
        return msg.startswith("NVRM:") and not msg.startswith(("NVRM: The ", "NVRM: Xid", "NVRM: loading"))

    def event(self, *, path: str, node: str | None) -> KernelEventBase | None:
        text = " ".join(p.strip() for p in self.parts)
        if "fallen off the bus" not in text:
            return None
        return make_kernel_event("fallen_off_bus", node=self.host or node, file=path, line=self.lineno,
                                 timestamp=self.ts, pci=normalize_pci(text), message=_cap(text), severity="crit")


def _classify(source: str, msg: str, level: str | None) -> tuple[str, dict[str, object]] | None:
    """The event kind and typed values of one message, or None (not an event)."""
    found = (classify_gpu(msg) or classify_lustre(msg) or classify_fs_client(source, msg) or classify_oom(msg)
             or classify_link(msg) or classify_hung(msg) or classify_pcie(msg) or classify_slurm_node(source, msg, level)
             or classify_gpu_stack(source, msg) or classify_host_fault(msg))  # the first that takes it (each: a tuple or None)
    if found is not None:
        return found
    if error_level(msg, level):
        return "generic", {}
    return None


_classify_seen = lru_cache(maxsize=16384)(_classify)
"""_classify is a pure function of its arguments, and the nodes of one cluster print the same driver,
link and file-system lines: each distinct (tag, message, priority) is classified once. Its values
are read, never changed, by the caller."""
_MAX_MEMO = 512  # longer messages are rare and mostly unique: not worth keeping


def _classified(source: str, msg: str, level: str | None) -> tuple[str, dict[str, object]] | None:
    return _classify_seen(source, msg, level) if len(msg) <= _MAX_MEMO else _classify(source, msg, level)


def _merge_oom(events: list[KernelEventBase], event: KernelEventBase, lineno: int) -> bool:
    """Fold the second line of one OOM kill (``oom-kill:`` + ``Killed process``) into the first."""
    last = events[-1] if events else None
    if not (isinstance(event, OomKillEvent) and isinstance(last, OomKillEvent) and event.pid is not None
            and last.pid == event.pid and lineno - last.line <= 5):
        return False
    for name in ("scope", "anon_rss_kib", "constraint", "oom_memcg", "task_memcg", "uid", "slurm_job", "process"):
        if getattr(last, name) is None and getattr(event, name) is not None:
            setattr(last, name, getattr(event, name))
    if event.message.startswith(("Out of memory", "Memory cgroup")):
        last.message = event.message
    return True


_HUGEPAGES = re.compile(r"\bhugepages_total=\d+ hugepages_free=(?P<free>\d+) .*?hugepages_size=(?P<size>\d+)kB")


def parse_kernel_log(text: str, *, path: str, node: str | None = None, prefilter: bool = True) -> list[KernelEventBase]:
    """Parse kernel/system log lines (format kernel-log) into typed events.

    Args:
        text: dmesg (-T/-x), journalctl or syslog output, or a GPFS mmfs.log (prefixes may be mixed).
        path: snapshot-relative path; events carry it with their 1-based line number.
        node: the manifest's node; a host name printed on the line wins.
        prefilter: classify only the lines tools.parsers.kernel._prefilter finds can be events (same
            result, faster); False classifies every line (what the prefilter's test compares with).

    Returns the events in file order (see tools.models.logs for each kind's fields); messages are
    capped at 500 characters, generic events at ``MAX_GENERIC`` per file. Never raises on content:
    lines that match nothing are skipped, and a cut-off last line yields what it holds.
    """
    events: list[KernelEventBase] = []
    huge: dict[str | None, int] = {}  # per host: free huge pages (KiB) of the OOM report being read
    generic = 0
    group: _Group | None = None
    wanted = candidate_lines(text) if prefilter else None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if wanted is not None and group is None and lineno not in wanted:
            continue  # holds no word any classifier needs (an open multi-line message reads on)
        if not raw.strip():
            continue
        pre = split_prefix(raw[:_MAX_ANALYZED])
        msg = pre.message
        if group is not None:
            if group.takes(msg, pre.continuation):
                group.parts.append(msg)
                continue
            done = group.event(path=path, node=node)
            if done:
                events.append(done)
            group = None
        if FALLEN_START.match(msg):
            group = _Group(lineno, pre.timestamp, pre.host, msg)
            continue
        hp = _HUGEPAGES.search(msg) if "hugepages_total=" in msg else None  # a substring test per line, not a regex
        if hp:  # the Mem-Info lines of an OOM report, between "invoked oom-killer" and "Killed process"
            host = pre.host or node
            huge[host] = huge.get(host, 0) + int(hp["free"]) * int(hp["size"])
            continue
        found = _classified(pre.source, msg, pre.level)
        if found is None:
            continue
        kind, values = found
        if kind == "generic":
            generic += 1
            if generic > MAX_GENERIC:
                continue
        severity = pre.level or ("info" if values.get("what") in ("controller_restart", "controller_takeover", "module_loaded") else _SEVERE.get(kind))
        event = make_kernel_event(kind, node=pre.host or node, file=path, line=lineno, timestamp=pre.timestamp,
                                  message=_cap(msg), source=pre.source, severity=severity, **values)
        if not _merge_oom(events, event, lineno):
            events.append(event)
        if kind == "oom_kill" and (pages := huge.pop(pre.host or node, 0)):
            events[-1].hugepages_free_kib = pages  # type: ignore[attr-defined]
    if group is not None:
        done = group.event(path=path, node=node)
        if done:
            events.append(done)
    return events
