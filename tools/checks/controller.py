"""check_controller_unreachable: Slurm commands could not reach slurmctld — or slurmctld and sacct could
not reach slurmdbd, the accounting daemon of the same control plane (sacct fails, slurmctld queues
accounting records: ``DBD Agent queue size`` in sdiag, ``agent queue filling … RESTART SLURMDBD NOW``)."""

from __future__ import annotations

from tools.checks.base import CheckConfig
from tools.checks.base import kernel_evidence
from tools.facts import Facts
from tools.facts.queries import control_plane_hosts
from tools.knowledge.host import CLOCK_TROUBLE, CREDENTIAL_TIME
from tools.knowledge.precedence import confidence
from tools.models.logs import KernelEvent, SlurmMessageEvent, SlurmNodeEvent
from tools.models.findings import ActionSpec, Evidence, Finding

__all__ = ["ControllerConfig", "check_controller_unreachable"]


class ControllerConfig(CheckConfig):
    """Which error texts mean slurmctld itself is unreachable (not slurmdbd)."""

    controller_words: tuple[str, ...] = (
        "unable to contact slurm controller", "socket timed out", "zero bytes were transmitted",
        "communication connection failure", "connection refused", "unable to process configuration file",
        "parse error in file",
    )
    dbd_queue_alarm: int = 1000
    """sdiag ``DBD Agent queue size`` above which slurmctld is plainly not reaching slurmdbd."""


def check_controller_unreachable(facts: Facts, cfg: ControllerConfig) -> list[Finding]:
    """controller_unreachable when recorded Slurm commands (squeue, sinfo, scontrol, sdiag) printed
    controller communication errors instead of output, or job logs show srun/sbatch unable to reach it.

    Sources: SlurmClientError records (recorded error output), job-log slurm_message events (client
    errors and `scontrol ping` output naming the controller host, which becomes the culprit).
    """
    errors = [e for e in facts.slurm_errors if not e.format.startswith("sacct")
              and any(w in e.message.lower() for w in cfg.controller_words)]
    messages = [e for e in facts.job_events_of("slurm_message") if isinstance(e, SlurmMessageEvent)]
    log_lines = [e for e in messages if e.what == "controller_unreachable"
                 or "unable to contact slurm controller" in e.message.lower()]
    down = [e for e in messages if e.what == "controller_ping" and e.state == "DOWN"]
    killed = [e for e in facts.kernel_events_of("oom_kill") if (e.process or "") in ("slurmctld", "slurmdbd")]
    dbd = _dbd_findings(facts, cfg) + _planned_takeover(facts)
    if not errors and not log_lines and not down and not killed:
        return dbd
    # slurmctld blocked in the kernel (D state) on its host: waiting on StateSaveLocation's storage, usually.
    hung = [e for e in facts.kernel_events_of("hung_task") if getattr(e, "process", None) == "slurmctld" and e.node]
    answered, restarts = _answered_since(facts), _restarts(facts)
    if log_lines and answered and restarts and not errors and not down and not killed:
        return [_past_outage(log_lines, answered, restarts)] + dbd
    hosts_killed = sorted({e.node for e in killed if e.node and e.process == "slurmctld"})
    hosts_hung = sorted({e.node for e in hung if e.node not in hosts_killed})
    hosts = sorted({e.controller for e in down if e.controller} | set(hosts_killed) | set(hosts_hung))
    failing = [] if hosts else _failing_control_hosts(facts)
    hosts = hosts or sorted({e.node for e in failing if e.node})
    local = [] if hosts else _answers_only_locally(facts, errors)
    hosts = hosts or local
    fs_down = _fs_down(facts) if hung else []
    mine = set(control_plane_hosts(facts)) & set(hosts_hung) if hung else set()
    storage = [e for e in fs_down if e.node in mine]  # the file-system errors on slurmctld's own host
    munge, clocks = _munge_clock(facts)
    evidence = [Evidence(text=e.message[:300], file=e.path) for e in errors[:4]]
    evidence += [Evidence(text=e.message[:300], file=e.file, line=e.line) for e in (down[:2] + log_lines[:3])]
    evidence += [kernel_evidence(e) for e in killed[:2] + hung[:1] + storage[:1]]
    evidence += [kernel_evidence(e) for e in munge[:1] + clocks[:2] + failing[:2]]
    # The daemon's state in its host's kernel log is a direct signal about the controller, as strong as the
    # storage errors behind it (which it then explains: see SUPERSEDES).
    # Unless the same storage fails compute nodes too: then it is the file system that is down for everyone.
    shared = any(e.node not in hosts_hung for e in fs_down)
    strength = "direct" if (killed or hung) and errors and not shared else "state" if (errors or hosts) else "symptom"
    skewed = sorted({e.node for e in clocks if e.node})
    heavy = _rpc_heavy_user(facts)
    if heavy:
        evidence.insert(0, Evidence(text=f"sdiag: user {heavy[0]} sent {heavy[1]:,} RPCs, {heavy[2]:.0%} of all users' "
                                         "RPCs", metric="sdiag RPCs by user", value=heavy[1], unit="count"))
    # One notice reaches the user: addressed through one of their running jobs (squeue, else sacct).
    storm_jobs = [j.job_id for j in [*facts.jobs, *facts.acct]
                  if heavy and j.user == heavy[0] and (j.state or "") == "RUNNING"][:1]
    return [Finding(
        check="controller_unreachable", root_cause="controller_unreachable",
        message=f"{len(errors)} recorded Slurm command(s) and {len(log_lines)} log line(s) could not reach slurmctld"
        + (f"; slurmctld on {', '.join(gone)} is down" if (gone := [h for h in hosts if h not in hosts_hung
                                                                   and not failing and h not in local]) else "")
        + (f"; the control daemons or MUNGE fail on {', '.join(hosts)}: {failing[0].message[:160]}" if failing else "")
        + (f" (the kernel OOM killer ended {', '.join(sorted({e.process or '?' for e in killed}))})" if killed else "")
        + (f"; slurmctld is blocked in the kernel on {', '.join(hosts_hung)} ({len(hung)} hung-task report(s))" if hung else "")
        + (f", waiting on its file-system server {', '.join(sorted({s for e in storage if (s := _server(e))}))} "
           "(StateSaveLocation): restore that storage, slurmctld then resumes" if storage else "")
        + (f"; MUNGE credentials arrive expired and the clock of {', '.join(skewed)} is not synchronised: "
           "fix its time source (chrony/NTP), then munged" if munge and skewed else "")
        + (f"; user {heavy[0]} sends {heavy[2]:.0%} of the RPCs (sdiag): its polling saturates slurmctld" if heavy else "")
        + (f"; commands run on {', '.join(local)} itself answer, so slurmctld is up there and the path to it is "
           "what fails: a host firewall or the network in front of it (ports 6817/6818)" if local else ""),
        culprits=[f"node:{h}" for h in hosts + [n for n in skewed if n not in hosts]]
        + ([f"user:{heavy[0]}"] if heavy else []) + [f"job:{j}" for j in storm_jobs], evidence=evidence[:8],
        strength=strength, confidence=confidence(strength, corroborated=bool(errors and (hosts or log_lines))),
        suggested_actions=[ActionSpec(type="notify_owner", job=j, reason=f"user {heavy[0]}'s RPC rate saturates "
                                      "slurmctld: poll less often (sacct, or squeue --me every minute)")
                           for j in storm_jobs if heavy]
        # The team that runs the controller's host is told what was seen there (notify.node_owners).
        + [ActionSpec(type="notify_owner", node=h, reason="Slurm clients cannot reach slurmctld on this host")
           for h in hosts[:2] if facts.node(h) is None],
    )] + dbd


def _answers_only_locally(facts: Facts, errors: list) -> list[str]:
    """Hosts where a controller command recorded on the host itself answered (its artifact names the node)
    while the same kind of command recorded on other hosts failed to reach slurmctld: the daemon is up and
    only remote clients are refused — the host's firewall or its network path. [] otherwise."""
    failed_on = {a.node for a in facts.artifacts for e in errors if a.path == e.path}
    if not errors or None in failed_on and len(failed_on) == 1:
        return []  # no recorded failure tells where it was run from
    ok = {a.node for a in facts.artifacts if a.node and a.read and a.records and a.format.startswith(_ANSWERING)
          and not any(e.path == a.path for e in facts.slurm_errors)}
    return sorted(h for h in ok - failed_on if h in control_plane_hosts(facts) or facts.node(h) is None)


_SYSTEM_USERS = ("root", "slurm")


def _rpc_heavy_user(facts: Facts, share: float = 0.5, lead: float = 5.0) -> tuple[str, int, float] | None:
    """(user, RPC count, share) of the one user whose RPCs are at least ``share`` of every user's and ``lead``
    times the next user's in the newest sdiag's "Remote Procedure Call statistics by user" (root and the
    SlurmUser are the daemons themselves): a client loop polling slurmctld, the usual cause of its threads
    saturating. None otherwise."""
    samples = [r for r in facts.other if getattr(r, "rpcs_by_user", None)]
    if not samples:
        return None
    rows = sorted(samples[-1].rpcs_by_user, key=lambda r: -r.count)  # type: ignore[attr-defined]
    total = sum(r.count for r in rows)
    people = [r for r in rows if r.name not in _SYSTEM_USERS and r.id != 0]
    if not people or not total:
        return None
    top, rest = people[0], people[1:]
    if top.count / total >= share and (not rest or top.count >= lead * rest[0].count):
        return top.name, top.count, top.count / total
    return None


_DAEMON_FATAL = ("fatal", "not a valid controller", "too many open files", "cannot allocate memory",
                 "unable to create thread", "pthread_create")
"""slurmctld's own refusals to run: a fatal error, or this host not named SlurmctldHost (renamed, say); or its
resources exhausted: out of file descriptors (LimitNOFILE), memory or threads, it refuses the connections
clients wait on."""
_CONTROL_UNITS = ("slurm controller daemon", "slurmctld.service", "slurm dbd daemon", "slurmdbd.service")
"""systemd's names for the control daemons' units (``Failed to start Slurm controller daemon.``)."""
_AUTH_DAEMONS = ("munged", "munge")
"""MUNGE, which every Slurm RPC's credential passes through: its failure on the control host fails them all."""
_FAILED = ("error", "fail", "fatal", "insecure")


def _failing_control_hosts(facts: Facts) -> list[KernelEvent]:
    """MUNGE failing on a control host that is not a compute node (``munged: Error: Keyfile is insecure``,
    ``munge.service: Failed``, ``slurmctld: error: Munge encode failed``) or its control daemons' fatal lines:
    the host whose daemons fail is where the controller is lost. Timeouts a busy slurmctld logs are not."""
    compute = set(facts.node_names())
    out: list[KernelEvent] = []
    for host in control_plane_hosts(facts):
        if host in compute:
            continue
        for e in facts.kernel_events_on(host):
            low = e.message.lower()
            source = (e.source or "").lower()
            auth = source.startswith(_AUTH_DAEMONS) or "munge" in low  # munged's lines, munge.service, slurmctld's
            fatal = (source.startswith(("slurmctld", "slurmdbd")) and any(w in low for w in _DAEMON_FATAL)) or (
                source.startswith("systemd") and any(u in low for u in _CONTROL_UNITS) and "fail" in low)
            if any(w in low for w in CREDENTIAL_TIME):
                continue  # an expired or rewound credential is the sending host's clock (see _munge_clock)
            if (auth and any(w in low for w in _FAILED)) or fatal:
                out.append(e)  # type: ignore[arg-type]
    return out


def _fs_down(facts: Facts) -> list[KernelEvent]:
    """File-system client errors on any node (an NFS/Lustre/GPFS server not responding), restores left out."""
    return [e for e in facts.kernel_events_of("fs_client", "lustre_error") if e.node
            and getattr(e, "state", None) not in ("connection_restored", "restored")]


def _server(e: KernelEvent) -> str | None:
    return getattr(e, "server", None) or getattr(e, "nid", None) or getattr(e, "target", None)




def _munge_clock(facts: Facts) -> tuple[list[KernelEvent], list[KernelEvent]]:
    """MUNGE refusing credentials for their time (``Munge decode failed: Expired credential``: the encoding
    host's clock is off by more than the credential's TTL), and the nodes whose time service says their clock
    is not synchronised (chronyd, ntpd, systemd-timesyncd, the kernel's clocksource watchdog)."""
    munge = [e for e in facts.kernel_events if any(w in e.message.lower() for w in CREDENTIAL_TIME)]
    if not munge:
        return [], []
    clocks = [e for e in facts.kernel_events if any(w in e.message.lower() for w in CLOCK_TROUBLE)]
    return munge, clocks


_ANSWERING = ("squeue", "sinfo", "sdiag", "scontrol")


def _answered_since(facts: Facts) -> list[str]:
    """The controller commands recorded at capture that answered with records (none of them printed a
    communication error): slurmctld is reachable now, whatever the logs said earlier."""
    return sorted({a.format.split("-")[0] for a in facts.artifacts
                   if a.read and a.records and a.format.startswith(_ANSWERING)})


def _restarts(facts: Facts) -> list[SlurmNodeEvent]:
    """slurmctld's own log lines of a stop and start (``Terminate signal``, ``slurmctld version … started``,
    ``Running as primary controller``, ``Recovered information about N jobs``)."""
    return [e for e in facts.kernel_events_of("slurm_node")
            if isinstance(e, SlurmNodeEvent) and e.what == "controller_restart"]


def _planned_takeover(facts: Facts) -> list[Finding]:
    """healthy: an administrator asked for a takeover (``scontrol takeover``: REQUEST_TAKEOVER or REQUEST_CONTROL
    from a user in slurmctld's log), a backup slurmctld assumed control, and the controller commands recorded at
    capture answered — the HA pair did what it is for. Names both hosts, whose lines of the hand-over it explains.
    A backup taking over with no such request (the primary died) is left to unexplained_signals."""
    events = [e for e in facts.kernel_events_of("slurm_node") if isinstance(e, SlurmNodeEvent)]
    asked = [e for e in events if e.what == "controller_takeover"]
    took = [e for e in events if e.what == "controller_failover"]
    if not asked or not took:
        return []  # no hand-over in the logs: no pass over every recorded file
    answered = _answered_since(facts)
    failing = [e for e in facts.slurm_errors if not e.format.startswith("sacct")]
    if not answered or failing:
        return []
    hosts = sorted({e.node for e in asked + took if e.node})
    # The primary's own stop around the hand-over is part of it (REQUEST_CONTROL, then Terminate signal).
    hosts += sorted({e.node for e in _restarts(facts) if e.node and e.node not in hosts})
    return [Finding(
        check="controller_unreachable", root_cause="healthy",
        message=f"a planned slurmctld takeover: {asked[0].message[:100]} on {asked[0].node or '?'}, then the backup "
                f"took control ({took[0].node or '?'}), and the controller answered every command recorded at capture "
                f"({', '.join(answered)}): nothing to restart, no job to requeue",
        culprits=[f"node:{h}" for h in hosts], strength="state", confidence=0.3,
        evidence=[kernel_evidence(e) for e in asked[:1] + took[:1]],
    )]


def _past_outage(log_lines: list[SlurmMessageEvent], answered: list[str], restarts: list[SlurmNodeEvent]) -> Finding:
    """healthy: clients could not reach slurmctld while it restarted (slurmctld logged the stop and the
    start), and every controller command recorded at capture answered. The client errors are explained,
    not a current fault. Without a logged restart the errors stay a (symptom-strength) fault: the
    controller may be flapping between the lines and the capture."""
    when = f"; slurmctld logged a restart ({restarts[-1].message[:120]})"
    return Finding(
        check="controller_unreachable", root_cause="healthy",
        message=f"{len(log_lines)} log line(s) show clients failing to reach slurmctld earlier, but the controller "
                f"answered every command recorded at capture ({', '.join(answered)}){when}: a past interruption, "
                "not a current fault (retry what failed)",
        culprits=[], strength="state", confidence=0.3,
        evidence=[Evidence(text=e.message[:300], file=e.file, line=e.line) for e in log_lines[:3]]
        + [kernel_evidence(e) for e in restarts[-2:]],
    )


_DBD_WORDS = ("problem talking to the database", "slurmdbd", ":6819", "persistent connection", "agent queue filling",
              "dbd agent", "mysql_real_connect", "storage has gone away")


def _dbd_findings(facts: Facts, cfg: ControllerConfig) -> list[Finding]:
    """controller_unreachable for slurmdbd: sacct's recorded errors talking to the database, slurmctld or
    slurmdbd log lines saying so, and sdiag's DBD agent queue growing (records slurmctld holds until slurmdbd
    is back; past MaxDBDMsgs they are dropped)."""
    sacct = [e for e in facts.slurm_errors if e.format.startswith("sacct") and any(w in e.message.lower() for w in _DBD_WORDS)]
    logs = [e for e in facts.kernel_events_of("slurm_node", "generic") if (e.source or "").startswith(("slurmctld", "slurmdbd"))
            and any(w in e.message.lower() for w in _DBD_WORDS)]
    samples = sorted((r for r in facts.other if getattr(r, "dbd_agent_queue_size", None) is not None),
                     key=lambda r: (r.captured_at is not None, r.captured_at or 0))
    queued = samples[-1].dbd_agent_queue_size if samples else 0  # the newest sdiag: the queue now
    peak = max(samples, key=lambda r: r.dbd_agent_queue_size) if samples else None
    if not sacct and peak is not None and len(samples) >= 2 and peak.dbd_agent_queue_size >= cfg.dbd_queue_alarm \
            and queued < cfg.dbd_queue_alarm:
        return [_drained(facts, peak, samples[-1])]
    if not sacct and not logs and queued < cfg.dbd_queue_alarm:
        return []
    hosts = sorted({e.node for e in logs if e.node and (e.source or "").startswith("slurmdbd")})
    evidence = [Evidence(text=e.message[:300], file=e.path) for e in sacct[:2]] + [kernel_evidence(e) for e in logs[:3]]
    if queued:
        evidence.append(Evidence(text=f"sdiag: DBD Agent queue size {queued}", metric="sdiag", value=queued, unit="count"))
    return [Finding(
        check="controller_unreachable", root_cause="controller_unreachable",
        message="slurmdbd (accounting) unreachable: " + (f"{len(sacct)} sacct call(s) failed; " if sacct else "")
        + (f"slurmctld holds {queued} accounting record(s) for it (lost past MaxDBDMsgs); " if queued else "")
        + "squeue and job starts are unaffected" + (f"; slurmdbd on {', '.join(hosts)} logged errors" if hosts else ""),
        culprits=[f"node:{h}" for h in hosts], evidence=evidence[:6],
        strength="state", confidence=confidence("state", corroborated=bool(sacct) and bool(logs or queued)),
        suggested_actions=[],
    )]


def _drained(facts: Facts, peak: object, now: object) -> Finding:
    """healthy: the DBD agent queue rose past the alarm and had drained by the newest sdiag, and sacct answers —
    slurmdbd fell behind (a rollup or purge holding the database) and caught up; nothing to restart. Names the
    control-plane hosts, whose lines of that episode it explains."""
    def at(r: object) -> str:
        when = getattr(r, "captured_at", None)
        return when.strftime("%H:%M") if when else "?"
    hosts = sorted(control_plane_hosts(facts))
    return Finding(
        check="controller_unreachable", root_cause="healthy",
        message=f"the DBD Agent queue reached {peak.dbd_agent_queue_size:,} at {at(peak)} and was "  # type: ignore[attr-defined]
                f"{now.dbd_agent_queue_size:,} at {at(now)}, and sacct answers: slurmdbd fell behind "  # type: ignore[attr-defined]
                "(a rollup or purge holding the database) and caught up; nothing to restart",
        culprits=[f"node:{h}" for h in hosts],
        evidence=[Evidence(text=f"sdiag {at(r)}: DBD Agent queue size {r.dbd_agent_queue_size}", metric="sdiag",  # type: ignore[attr-defined]
                           value=r.dbd_agent_queue_size, unit="count") for r in (peak, now)],  # type: ignore[attr-defined]
        strength="state", confidence=0.3,
    )
