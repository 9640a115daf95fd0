"""Parser for kernel logs: `dmesg`, `dmesg -T`, `journalctl -k` (format kernel-log).

Line prefixes understood (the rest of the line is the message)::

    [ 1843.308145] NVRM: Xid (PCI:0000:b3:00): 79, pid=48213, name=python, GPU has fallen off the bus.
    [Wed Mar  4 10:01:02 2026] LustreError: 11-0: lustre-OST0003-osc-ffff…: operation ost_write to node 10.0.0.1@o2ib failed: rc = -107
    Mar 04 10:01:02 gpu017 kernel: Memory cgroup out of memory: Killed process 48213 (python) total-vm:…, anon-rss:…kB, …
    2026-03-04T10:01:02+0000 gpu017 kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN
    kern  :err   : [ 1843.308145] …         (dmesg -x)

and indented continuation lines without a prefix (dmesg prints multi-line NVRM messages so).
Events: Xid, the multi-line "fallen off the bus" NVRM message without an Xid number, NVRM ECC /
row-remap failures, Lustre/LNet client errors, OOM kills, InfiniBand link changes and hung tasks.
Other lines are not events. A line is the unit, so a file cut mid-line parses as far as it goes.
Real shapes: NVIDIA Xid docs, NVSentinel#155 / gpud#1209 (fallen off the bus without Xid), Lustre
manual, kernel OOM messages (see tests/fixtures/kernel-log/SOURCES.md).
"""

from __future__ import annotations

import re

from tools.models.logs import KernelEvent

__all__ = ["parse_kernel_log", "normalize_pci"]

MAX_MESSAGE = 500
_MAX_ANALYZED = 4096  # characters of a line that are classified; real messages are far shorter

_PREFIXES = [
    re.compile(r"^(?:<\d+>)?(?:\w+\s*:\s*\w+\s*:\s+)?(?P<ts>\[\s*\d+\.\d+\])\s?(?P<msg>.*)$"),  # dmesg (-x)
    re.compile(r"^(?:\w+\s*:\s*\w+\s*:\s+)?(?P<ts>\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\])\s?(?P<msg>.*)$"),  # -T
    re.compile(r"^(?P<ts>\w{3} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?) (?P<host>\S+) kernel: (?:\[\s*\d+\.\d+\] )?(?P<msg>.*)$"),
    re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?) (?P<host>\S+) kernel: (?:\[\s*\d+\.\d+\] )?(?P<msg>.*)$"),
]

_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)\): (?P<xid>\d{1,6})(?:, (?P<rest>.*))?")
_XID_PID = re.compile(r"pid=(?:'?<unknown>'?|(?P<pid>\d{1,10}))")
_XID_NAME = re.compile(r"name=(?P<name>[^,]+)")
_PCI = re.compile(r"\b(?P<dom>[0-9a-fA-F]{4,8}):(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})(?:\.(?P<fn>\d))?\b")
_FALLEN_START = re.compile(r"^NVRM: The NVIDIA GPU (?P<pci>\S+)")
# Xids that report memory (ECC / row-remap) faults, per NVIDIA's Xid catalogue.
_XID_ECC = {48: "dbe", 63: "row_remap_pending", 64: "row_remap_failure", 92: "high_sbe_rate",
            94: "contained_ecc", 95: "uncontained_ecc"}
_ECC = re.compile(r"uncorrectable|double[- ]bit|\bDBE\b|row remap\w* fail|remapping failure", re.IGNORECASE)

# Targets and NIDs are found by their fixed tail and then walked back to the token start: a
# pattern like "[\w.-]+?-OST\d{4}" backtracks quadratically on long hostile lines.
_TARGET_TAIL = re.compile(r"-(?:MDT|OST)[0-9a-fA-F]{4}(?![0-9a-fA-F])")
_NID_TAIL = re.compile(r"@(?:o2ib|tcp|kfi|gni|ptl)\d*\b")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_NID_CHARS = _NAME_CHARS | {":"}
_RC = re.compile(r"\brc = (?P<rc>-?\d+)")
_LUSTRE_OP = re.compile(r"operation (?P<op>\w+) to node (?P<nid>\S+) failed")
_LUSTRE_STATES = [
    (re.compile(r"was lost; in progress operations"), "connection_lost"),
    (re.compile(r"This client was evicted by"), "evicted"),
    (re.compile(r"Connection restored to"), "connection_restored"),
    (re.compile(r"Request sent has timed out|Request sent has failed"), "request_timeout"),
    (re.compile(r"Timed out"), "lnet_timeout"),
    (re.compile(r"operation \w+ to node \S+ failed"), "op_failed"),
]

_OOM_KILLED = re.compile(r"(?P<scope>Memory cgroup out of memory|Out of memory)(?: \([^)]*\))?: Kill(?:ed)? process (?P<pid>\d{1,10}) \((?P<proc>[^)]*)\)")
_OOM_KILLED_OLD = re.compile(r"^Killed process (?P<pid>\d{1,10}) \((?P<proc>[^)]*)\)")
_OOM_KILL = re.compile(r"^oom-kill:(?P<kv>\S+)")
_ANON_RSS = re.compile(r"anon-rss:(?P<kib>\d+)kB")
_SLURM_JOB = re.compile(r"/job_(?P<job>\d+)")

_IB_PORT = re.compile(r"(?P<dev>mlx\d_\d+|mlx\d_core \S+)?:? ?Port: (?P<port>\d+) Link (?P<state>DOWN|ACTIVE|INIT|ARMED|UP)\b")
_IB_MODULE = re.compile(r"(?:mlx\d_port_module_event.*)?Port module event(?P<err>\[error\])?: module (?P<module>\d+), (?P<detail>.*)")
"""Cable/transceiver events, with (older kernels) or without the mlx5_port_module_event function prefix."""
_IB_CARRIER = re.compile(r"^(?:IPv6: ADDRCONF\(NETDEV_CHANGE\): )?(?P<dev>ib\w*|ibp\w*): (?P<what>lost carrier|link becomes ready|carrier on)")
_IB_LINK_UPDOWN = re.compile(r"^mlx\d_core \S+ (?P<dev>\S+): Link (?P<state>up|down)\b", re.IGNORECASE)

_HUNG = re.compile(r"^INFO: task (?P<proc>.+):(?P<pid>\d{1,10}) blocked for more than (?P<secs>\d{1,10}) seconds")


def normalize_pci(text: str) -> str | None:
    """Canonical PCI address ``dddd:bb:dd.f`` (lowercase, 4-digit domain) of ``0000:B3:00``,
    ``00000000:b3:00.0`` and the like; the function defaults to 0 (GPUs are function 0)."""
    m = _PCI.search(text)
    if not m:
        return None
    return f"{m['dom'][-4:]}:{m['bus']}:{m['dev']}.{m['fn'] or 0}".lower()


def _split(line: str) -> tuple[str | None, str | None, str, bool]:
    """(timestamp as printed, host, message, is_continuation) of one raw line."""
    for rx in _PREFIXES:
        m = rx.match(line)
        if m:
            return m["ts"], m.groupdict().get("host"), m["msg"].strip(), False
    return None, None, line.strip(), line[:1].isspace()


def _cap(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _walk_back(text: str, end: int, allowed: frozenset[str], limit: int = 64) -> int:
    """Start index of the run of ``allowed`` characters that ends at ``end`` (at most ``limit``)."""
    start = end
    while start > 0 and end - start < limit and text[start - 1] in allowed:
        start -= 1
    return start


def _find_target(msg: str) -> str | None:
    """First Lustre target name (``lustre-OST0003``) in a message, without the -osc-… suffix."""
    for m in _TARGET_TAIL.finditer(msg):
        start = _walk_back(msg, m.start(), _NAME_CHARS)
        if start < m.start():
            return msg[start:m.end()].lstrip("-.")
    return None


def _find_nid(msg: str) -> str | None:
    """First LNet NID (``10.0.0.13@o2ib``) in a message."""
    for m in _NID_TAIL.finditer(msg):
        start = _walk_back(msg, m.start(), _NID_CHARS)
        if start < m.start():
            return msg[start:m.end()]
    return None


def _lustre(msg: str) -> dict[str, str] | None:
    if not msg.startswith(("LustreError:", "LNetError:", "Lustre:", "LNet:")):
        return None
    state = next((name for rx, name in _LUSTRE_STATES if rx.search(msg)), None)
    if state is None:
        if not msg.startswith(("LustreError:", "LNetError:")):
            return None  # informational Lustre:/LNet: lines
        state = "error"
    fields = {"state": state}
    op = _LUSTRE_OP.search(msg)
    if op:
        fields["op"] = op["op"]
    target, nid, rc = _find_target(msg), _find_nid(msg), _RC.search(msg)
    if target:
        fields["target"] = target
    if nid:
        fields["nid"] = nid
    if rc:
        fields["rc"] = rc["rc"]
    return fields


def _oom(msg: str) -> tuple[int | None, str | None, dict[str, str]] | None:
    m = _OOM_KILLED.search(msg) or _OOM_KILLED_OLD.search(msg)
    if m:
        fields: dict[str, str] = {}
        scope = m.groupdict().get("scope")
        if scope:
            fields["scope"] = "memcg" if scope.startswith("Memory cgroup") else "system"
        rss = _ANON_RSS.search(msg)
        if rss:
            fields["anon_rss_kib"] = rss["kib"]
        return int(m["pid"]), m["proc"][:200], fields
    m = _OOM_KILL.search(msg)
    if m:
        kv = dict(part.split("=", 1) for part in m["kv"].split(",") if "=" in part)
        fields = {k: v[:200] for k, v in kv.items() if k in ("constraint", "oom_memcg", "task_memcg", "uid")}
        job = _SLURM_JOB.search(kv.get("task_memcg", "") or kv.get("oom_memcg", ""))
        if job:
            fields["slurm_job"] = job["job"]
        pid = kv.get("pid", "")
        task = kv.get("task")
        return (int(pid) if pid.isdigit() and len(pid) <= 10 else None), task[:200] if task else None, fields
    return None


def _ib(msg: str) -> dict[str, str] | None:
    m = _IB_PORT.search(msg)
    if m:
        state = {"DOWN": "down", "ACTIVE": "up", "UP": "up"}.get(m["state"], m["state"].lower())
        fields = {"state": state, "port": m["port"]}
        if m["dev"]:
            fields["device"] = m["dev"].split()[-1]
        return fields
    m = _IB_MODULE.search(msg)
    if m:
        return {"state": "module_error" if m["err"] else "module_event", "module": m["module"], "detail": m["detail"][:200]}
    m = _IB_CARRIER.search(msg)
    if m:
        return {"state": "down" if m["what"] == "lost carrier" else "up", "port": m["dev"]}
    m = _IB_LINK_UPDOWN.search(msg)
    if m and ("ib" in m["dev"] or "mlx" in msg):
        return {"state": m["state"].lower(), "port": m["dev"]}
    return None


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

    def event(self, *, path: str, node: str | None) -> KernelEvent | None:
        text = " ".join(p.strip() for p in self.parts)
        if "fallen off the bus" not in text:
            return None
        return KernelEvent(node=self.host or node, file=path, line=self.lineno, timestamp=self.ts,
                           kind="fallen_off_bus", pci=normalize_pci(text), message=_cap(text))


def _event(msg: str, *, path: str, lineno: int, ts: str | None, node: str | None) -> KernelEvent | None:
    """The event a single-line message is, or None."""

    def make(kind: str, **kw: object) -> KernelEvent:
        return KernelEvent(node=node, file=path, line=lineno, timestamp=ts, kind=kind, message=_cap(msg), **kw)  # type: ignore[arg-type]

    m = _XID.search(msg)
    if m:
        rest = m["rest"] or ""
        pid = _XID_PID.search(rest)
        name = _XID_NAME.search(rest)
        process = name["name"].strip()[:200] if name and "<unknown>" not in name["name"] else None
        fields = {"pci_printed": m["pci"]}
        if int(m["xid"]) in _XID_ECC:
            fields["ecc"] = _XID_ECC[int(m["xid"])]
        return make("xid", xid=int(m["xid"]), pci=normalize_pci(m["pci"]),
                    pid=int(pid["pid"]) if pid and pid["pid"] else None, process=process, fields=fields)
    if msg.startswith("NVRM:"):
        if "fallen off the bus" in msg:
            return make("fallen_off_bus", pci=normalize_pci(msg))
        if _ECC.search(msg):
            return make("gpu_ecc", pci=normalize_pci(msg))
        return None
    lustre = _lustre(msg)
    if lustre is not None:
        return make("lustre_error", fields=lustre)
    oom = _oom(msg)
    if oom is not None:
        pid, process, fields = oom
        return make("oom_kill", pid=pid, process=process, fields=fields)
    ib = _ib(msg)
    if ib is not None:
        return make("ib_link", fields=ib)
    hung = _HUNG.search(msg)
    if hung:
        return make("hung_task", pid=int(hung["pid"]), process=hung["proc"][:200], fields={"blocked_s": hung["secs"]})
    return None


def parse_kernel_log(text: str, *, path: str, node: str | None = None) -> list[KernelEvent]:
    """Parse kernel log lines (format kernel-log) into events.

    Args:
        text: dmesg, dmesg -T or journalctl -k output (prefixes may be mixed).
        path: snapshot-relative path; events carry it with their 1-based line number.
        node: the manifest's node; a journalctl host name on the line wins.

    Returns the events in file order: ``xid`` (xid, pci as ``dddd:bb:dd.f``, pid/process when
    printed, fields ecc for memory-fault Xids 48/63/64/92/94/95), ``fallen_off_bus`` (the multi-line NVRM message joined into one event at its first
    line), ``gpu_ecc``, ``lustre_error`` (fields state/target/op/rc/nid), ``oom_kill`` (pid,
    process, fields anon_rss_kib/constraint/slurm_job; the ``oom-kill:`` and ``Killed process``
    lines of one kill merge), ``ib_link`` (fields state up/down/init/module_error/module_event, and port or module) and
    ``hung_task``. Messages are capped at 500 characters. Never raises on content: lines that
    match nothing are skipped, and a cut-off last line yields what it holds.
    """
    events: list[KernelEvent] = []
    group: _Group | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        ts, host, msg, continuation = _split(raw[:_MAX_ANALYZED])
        if group is not None:
            if group.takes(msg, continuation):
                group.parts.append(msg)
                continue
            done = group.event(path=path, node=node)
            if done:
                events.append(done)
            group = None
        if _FALLEN_START.match(msg):
            group = _Group(lineno, ts, host, msg)
            continue
        event = _event(msg, path=path, lineno=lineno, ts=ts, node=host or node)
        if event is None:
            continue
        last = events[-1] if events else None
        if (event.kind == "oom_kill" and last is not None and last.kind == "oom_kill" and event.pid is not None
                and last.pid == event.pid and lineno - last.line <= 5):
            last.fields.update(event.fields)  # oom-kill: line + Killed process line of the same kill
            last.process = last.process or event.process
            if event.message.startswith(("Out of memory", "Memory cgroup")):
                last.message = event.message
            continue
        events.append(event)
    if group is not None:
        done = group.event(path=path, node=node)
        if done:
            events.append(done)
    return events
