"""Kernel/system-log classifiers for the host: OOM killer, hung tasks, slurmd/slurmstepd/SPANK lines, and
the error-level test that keeps unclassified lines as generic events.

Shapes: the kernel's OOM messages (``oom-kill:constraint=…,task_memcg=/slurm/uid_N/job_N/…``,
``Memory cgroup out of memory: Killed process N (name) … anon-rss:…kB``), the hung-task detector
(``INFO: task NAME:PID blocked for more than N seconds.``), slurmd/slurmstepd syslog lines
(``error: prolog failed: rc:…``, ``spank-epilog: error: pyxis: …``, ``*** JOB N STEPD TERMINATED ON …
DUE TO JOB NOT ENDING WITH SIGNALS ***``).
"""

from __future__ import annotations

import re

from tools.parsers.kernel._gpu import Classified

__all__ = ["classify_oom", "classify_hung", "classify_slurm_node", "classify_host_fault", "error_level", "SLURM_SOURCES"]

_OOM_KILLED = re.compile(r"(?P<scope>Memory cgroup out of memory|Out of memory)(?: \([^)]*\))?: Kill(?:ed)? process "
                         r"(?P<pid>\d{1,10}) \((?P<proc>[^)]*)\)")
_OOM_KILLED_OLD = re.compile(r"^Killed process (?P<pid>\d{1,10}) \((?P<proc>[^)]*)\)")
_OOM_KILL = re.compile(r"^oom-kill:(?P<kv>\S+)")
_ANON_RSS = re.compile(r"anon-rss:(?P<kib>\d{1,15})kB")
_SLURM_JOB = re.compile(r"/job_(?P<job>\d{1,12})")
_HUNG = re.compile(r"^INFO: task (?P<proc>.+):(?P<pid>\d{1,10}) blocked for more than (?P<secs>\d{1,10}) seconds")

SLURM_SOURCES = ("slurmd", "slurmstepd", "slurmctld", "spank", "slurm-prolog", "slurm-epilog")
_SLURM_RULES = [
    # slurmd that cannot start: a plugin that will not load (cgroup v1 plugins on a cgroup v2 host), its
    # initialisation failing; the node stays down whatever slurmctld is told.
    (re.compile(r"slurmd initialization failed|Couldn't load specified plugin|Plugin init\(\) callback failed|"
                r"cgroup namespace '\w+' not mounted|unable to create \w+ cgroup namespace|"
                r"cannot create proctrack context|fatal: Unable to initialize", re.IGNORECASE), "slurmd_start_failed"),
    (re.compile(r"spank[-_:]|pyxis|enroot", re.IGNORECASE), "spank_error"),
    (re.compile(r"prolog (?:failed|error)|error: .*prolog|Prolog failed", re.IGNORECASE), "prolog_failed"),
    # Not MESSAGE_EPILOG_COMPLETE failing to send: that is slurmd not reaching slurmctld, whatever the epilog did.
    (re.compile(r"epilog (?:failed|error)|error: (?!.*EPILOG_COMPLETE).*epilog|Epilog failed", re.IGNORECASE),
     "epilog_failed"),
    (re.compile(r"NOT ENDING WITH SIGNALS|Kill task failed|unkillable", re.IGNORECASE), "kill_task_failed"),
    (re.compile(r"DUE TO NODE FAIL", re.IGNORECASE), "node_fail"),
    (re.compile(r"\*\*\* (?:JOB|STEP) \S+ (?:ON \S+ )?CANCELLED", re.IGNORECASE), "job_cancelled"),
    (re.compile(r"gres|gpu count|Invalid GRES", re.IGNORECASE), "gres_error"),
]
_CTLD_LIFECYCLE = re.compile(
    r"Terminate signal \(SIGINT or SIGTERM\) received|slurmctld version \S+ started|Running as primary controller|"
    r"Recovered information about \d+ jobs|Recovered state of \d+ nodes", re.IGNORECASE)
"""slurmctld's own info lines around a stop and start (its log, or journalctl -u slurmctld)."""
_CTLD_TAKEOVER = re.compile(r"Processing RPC: REQUEST_(?:TAKEOVER|CONTROL)\b")
"""``scontrol takeover`` (REQUEST_TAKEOVER to the backup) or a controlled hand-over (REQUEST_CONTROL to the primary)."""
_CTLD_FAILOVER = re.compile(r"BackupController\d* \S+ taking over|backup controller \S+ taking over|"
                            r"taking over as (?:primary|the) controller", re.IGNORECASE)
"""A backup slurmctld assuming control (``ControlMachine X not responding, BackupController1 Y taking over``)."""
_SLURM_JOBID = re.compile(r"(?:JOB|JobId=|job[ _])(?P<job>\d{1,12})", re.IGNORECASE)

_HOST_FAULT_RULES: list[tuple[re.Pattern[str], str, bool]] = [
    (re.compile(r"^Kernel panic - not syncing", re.IGNORECASE), "panic", True),
    (re.compile(r"\[Hardware Error\]:.*(?:event severity|type): fatal", re.IGNORECASE), "hardware_error", True),
    (re.compile(r"Machine check events logged", re.IGNORECASE), "machine_check", False),
    (re.compile(r"Fatal machine check|Machine check: Processor context corrupt|Machine Check Exception|"
                r"MCE: Uncorrected|mce: Uncorrected", re.IGNORECASE), "machine_check", True),
    (re.compile(r"\[Hardware Error\]:", re.IGNORECASE), "hardware_error", False),  # the record's other lines
    (re.compile(r"^EDAC \S+: \d+ UE\b|\buncorrectable (?:memory )?error\b.*\bDIMM", re.IGNORECASE), "memory_ue", True),
    (re.compile(r"^EDAC \S+: \d+ CE\b", re.IGNORECASE), "memory_ce", False),
    (re.compile(r"Watchdog detected hard LOCKUP", re.IGNORECASE), "hard_lockup", True),
    (re.compile(r"BUG: soft lockup - CPU#", re.IGNORECASE), "soft_lockup", False),
    (re.compile(r"^(?:BUG: unable to handle|Oops: )", re.IGNORECASE), "oops", False),
    # x86 therm_throt: "CPU12: Core temperature above threshold, cpu clock throttled (total events = 3412)"
    (re.compile(r"(?:Core|Package) temperature above threshold, cpu clock throttled", re.IGNORECASE),
     "cpu_thermal", False),
    # Intel VT-d: "DMAR: [DMA Read NO_PASID] Request device [4f:00.0] fault addr 0x… [fault reason 0x06] PTE Read
    # access is not set" (and the "DRHD: handling fault status reg" line before it); AMD: "AMD-Vi: Event logged
    # [IO_PAGE_FAULT device=41:00.0 domain=… address=… flags=…]" (newer kernels put the device at the line's head).
    (re.compile(r"DMAR: (?:\[DMA (?:Read|Write)|DRHD: handling fault)|\bIO_PAGE_FAULT\b", re.IGNORECASE),
     "iommu_fault", False),
]
"""Kernel messages of the host itself failing (kernel panic(), GHES/APEI hardware error records, the x86 MCE
handler, EDAC memory controllers, the lockup detectors), and whether each means the host went down."""
_HOST_FAULT_WORDS = ("panic", "hardware error", "lockup", "machine check", "edac", "oops", "bug:", "uncorrect",
                     "temperature above threshold", "dmar", "io_page_fault")
_IOMMU_DEVICE = re.compile(r"Request device \[([0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])\]|device=(?:[0-9a-f]{4}:)?"
                           r"([0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])|^\S+ (?:[0-9a-f]{4}:)?([0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]): AMD-Vi",
                           re.IGNORECASE)
_FRU = re.compile(r"fru_text: (?P<fru>\S+)|(?P<dimm>DIMM[#_ ]?\w+)")


def classify_host_fault(msg: str) -> Classified | None:
    """A host failure line (panic, fatal hardware error, machine check, EDAC UE/CE, lockups, oops); else None."""
    low = msg.lower()
    if not any(w in low for w in _HOST_FAULT_WORDS):
        return None  # cheap pre-filter: most lines say none of these
    for pattern, what, fatal in _HOST_FAULT_RULES:
        if pattern.search(msg):
            values: dict[str, object] = {"what": what, "fatal": fatal}
            if what == "iommu_fault":
                if (d := _IOMMU_DEVICE.search(msg)) is not None:
                    values["device"] = (d.group(1) or d.group(2) or d.group(3)).lower()
            elif (m := _FRU.search(msg)) is not None:
                values["fru"] = (m.group("fru") or m.group("dimm"))[:80]
            return "host_fault", values
    return None


_ERROR_WORDS = re.compile(
    r"\b(?:error|errors|err|fail(?:ed|ure|ing)?|fatal|critical|panic|timed? ?out|timeout|unable to|cannot|can't|"
    r"corrupt(?:ed|ion)?|abort(?:ed|ing)?|segfault|oops|refused|unreachable|lost|exception|"
    r"uncorrectable|offline|not responding|denied|soft lockup|hard lockup|stuck|machine check|call trace|"
    r"no space left on device|disk is full|disk quota exceeded|clock unsynchroni[sz]ed|no servers can be used|"
    r"no selectable sources)\b"
    r"|\bBUG:", re.IGNORECASE)
_BENIGN = re.compile(
    r"\b(?:corrected|correctable|no errors?|0 errors|errors?: 0|recovered|succeeded|successful(?:ly)?|"
    r"error[_ ]?count[=: ]0|ignoring|ignored)\b|^ACPI (?:BIOS )?(?:Error|Warning)|\bACPI Error\b|"
    r"AE_NOT_FOUND|errors=remount-ro|firmware bug|module verification failed|tainting kernel|\[Firmware Bug\]|ERST: Error Record|Spectre|retbleed|mitigation|"
    r"FWTracer: Events were lost|nv_get_p2p_free_callback.*invalid context|"
    r"error status/mask=|^\s*\[\s*\d{1,2}\] \w+\s*(?:\(First\))?\s*$|^[IW]\d{4} \d\d:\d\d:\d\d|"
    # sunrpc's svc_tcp_sendto: a client reset (-104) or closed (-32) its connection (a reboot, a remount)
    r"rpc-srv/tcp: nfsd: got error -(?:104|32) when sending",
    re.IGNORECASE)
"""Error words that describe something fixed or firmware noise every node prints (ACPI table bugs, mlx5's
firmware tracer overrunning its buffer, nvidia-peermem's callback after a GPUDirect process freed its
memory on exit); the detail lines of a PCIe AER record (``device [15b3:101b] error status/mask=…``, ``[ 0]
RxErr``), whose header line carries the record's severity; and a Kubernetes component's glog INFO/WARNING lines
(``I1006 09:10:27 … "Pod admission denied"``: the kubelet's own level says what it is)."""


def classify_oom(msg: str) -> Classified | None:
    """An OOM-killer kill (the ``oom-kill:`` summary or the ``Killed process`` line); else None."""
    m = _OOM_KILLED.search(msg) or _OOM_KILLED_OLD.search(msg)
    if m:
        values: dict[str, object] = {"pid": int(m["pid"]), "process": m["proc"][:200]}
        scope = m.groupdict().get("scope")
        if scope:
            values["scope"] = "memcg" if scope.startswith("Memory cgroup") else "system"
        rss = _ANON_RSS.search(msg)
        if rss:
            values["anon_rss_kib"] = int(rss["kib"])
        return "oom_kill", values
    m = _OOM_KILL.search(msg)
    if m:
        kv = dict(part.split("=", 1) for part in m["kv"].split(",") if "=" in part)
        values = {k: v[:200] for k, v in kv.items() if k in ("constraint", "oom_memcg", "task_memcg", "uid")}
        job = _SLURM_JOB.search(kv.get("task_memcg", "") or kv.get("oom_memcg", ""))
        if job:
            values["slurm_job"] = job["job"]
        pid = kv.get("pid", "")
        values["pid"] = int(pid) if pid.isdigit() and len(pid) <= 10 else None
        values["process"] = kv["task"][:200] if kv.get("task") else None
        return "oom_kill", values
    return None


def classify_hung(msg: str) -> Classified | None:
    """A hung-task (D state) report; else None."""
    m = _HUNG.search(msg)
    if not m:
        return None
    return "hung_task", {"pid": int(m["pid"]), "process": m["proc"][:200], "blocked_s": int(m["secs"])}


def classify_slurm_node(source: str, msg: str, level: str | None) -> Classified | None:
    """An error line of slurmd, slurmstepd or a SPANK plugin on a node, or slurmctld logging its own stop or
    start (``controller_restart``, info level); else None."""
    spank = bool(re.match(r"spank[-_]", msg)) or "spank" in source
    if not (source.startswith(SLURM_SOURCES) or spank):
        return None
    if source.startswith("slurmctld") and _CTLD_TAKEOVER.search(msg):
        return "slurm_node", {"what": "controller_takeover", "job": None}
    if source.startswith("slurmctld") and _CTLD_FAILOVER.search(msg):
        return "slurm_node", {"what": "controller_failover", "job": None}
    if source.startswith("slurmctld") and _CTLD_LIFECYCLE.search(msg):
        return "slurm_node", {"what": "controller_restart", "job": None}
    if not (spank or "error" in msg.lower() or "***" in msg or level in ("err", "crit", "alert", "emerg")):
        return None
    what = next((name for rx, name in _SLURM_RULES if rx.search(msg)), "error")
    job = _SLURM_JOBID.search(msg)
    return "slurm_node", {"what": what, "job": job["job"] if job else None}


def error_level(msg: str, level: str | None) -> bool:
    """Whether an unclassified line is error-level: a printed priority of err or worse, or (when none is
    printed) error words that are not about something corrected or known firmware noise."""
    if level in ("emerg", "alert", "crit", "err"):
        return not _BENIGN.search(msg)
    if level is not None:
        return False
    return bool(_ERROR_WORDS.search(msg)) and not _BENIGN.search(msg)
