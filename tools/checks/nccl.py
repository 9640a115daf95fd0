"""check_nccl_collective_failure: NCCL watchdog timeouts and remote errors in job logs.

An NCCL timeout is a symptom many causes share (a dead GPU, a bad link, a straggler, a program
whose ranks disagree), so findings here are deliberately less confident than a check that sees
the cause itself; the diagnostician prefers the specific cause when one is present.
"""

from __future__ import annotations

import re
from collections import defaultdict

from tools.checks.base import CheckConfig, job_culprits, log_evidence
from tools.facts import Facts
from tools.facts.queries import job_nodes, same_run_jobs
from tools.knowledge.precedence import confidence
from tools.checks.nccl_endpoints import common_endpoint
from tools.platform import log_owner, node_ref, take_out_of_service, victims
from tools.models.findings import ActionSpec, Finding
from tools.models.logs import JobLogEventBase, NcclRemoteErrorEvent, NcclTimeoutEvent, NetEvent

__all__ = ["NcclConfig", "check_nccl_collective_failure", "NCCL_CONFIG_ERRORS"]

NCCL_USAGE_ERRORS = re.compile(
    r"collective mismatch|ncclInvalidUsage|ncclInvalidArgument|invalid usage|Detected mismatch between collectives|"
    r"CollectiveFingerPrint|mismatched (?:collective|sizes)",
    re.IGNORECASE)
"""The program called collectives that do not match across ranks (NCCL's ``NET/IB : … collective mismatch error,
local size X remote size Y``, ``ncclInvalidUsage``; torch's TORCH_DISTRIBUTED_DEBUG ``Detected mismatch between
collectives on ranks``): a bug in the job, whatever network it ran over."""
NCCL_CONFIG_ERRORS = re.compile(
    r"no socket interface found|NCCL_SOCKET_IFNAME|NCCL_IB_HCA|no (?:IB|RoCE)? ?devices? found|"
    r"Bootstrap : no socket|invalid (?:value|NCCL_)|unknown (?:NCCL_|network)|NET/Plugin: .*not found|"
    r"Duplicate GPU detected",
    re.IGNORECASE)
"""NCCL's complaints at initialisation that what its environment asks for (interfaces, HCAs, a network
plugin) does not exist on the host, or that two ranks were given the same GPU (``Duplicate GPU detected :
rank 1 and rank 0 both on CUDA device 1b000``: the script's device mapping): the job's configuration, not a
fault of the network."""


class NcclConfig(CheckConfig):
    """NCCL-only evidence is a symptom (tools.knowledge.precedence): its strength is fixed there."""

    barrier_numel: int = 1
    """Elements of a collective that is a barrier in disguise (a 1-element ALLREDUCE)."""


def _numel(ev: JobLogEventBase) -> int | None:
    return ev.numel if isinstance(ev, NcclTimeoutEvent) else None


def check_nccl_collective_failure(facts: Facts, cfg: NcclConfig) -> list[Finding]:
    """Per job with NCCL failures: interconnect_fault (remote/network errors, or timeouts seen by
    several ranks) or user_code_error (one rank alone stuck in a 1-element collective: a barrier
    that the other ranks never entered — ranks out of step in the program, not the network).

    Sources: job-log events nccl_timeout / nccl_remote_error / nccl_error.
    """
    by_job: dict[str, list[JobLogEventBase]] = defaultdict(list)
    for ev in facts.job_events_of("nccl_timeout", "nccl_remote_error", "nccl_error", "net_event"):
        if ev.job and not (isinstance(ev, NetEvent) and (ev.local or not ev.fatal)):
            by_job[ev.job].append(ev)  # a transport that says the far end stopped answering: a remote error
    findings: list[Finding] = []
    for job, events in by_job.items():
        timeouts = [e for e in events if e.kind == "nccl_timeout"]
        # Only remote/network errors are evidence about the network; generic NCCL errors
        # ("terminate called after throwing DistBackendError") are the timeout's aftermath.
        remote = [e for e in events if e.kind in ("nccl_remote_error", "net_event")]
        others = [e for e in events if e.kind == "nccl_error"]
        ranks = {e.rank for e in timeouts if e.rank is not None}
        barrier_only = bool(timeouts) and all(_numel(e) == cfg.barrier_numel for e in timeouts)
        # The peer a rank names ("from peer X", "remote peer X") is the suspect; the host that
        # printed the line ("gpu009:pid:tid [0] NCCL WARN ...") is a victim, never a culprit.
        peers = sorted({e.peer for e in remote if isinstance(e, NcclRemoteErrorEvent) and e.peer})
        evidence = [log_evidence(e) for e in (remote + timeouts + others)[:5]]
        config = [e for e in others if NCCL_CONFIG_ERRORS.search(e.message)]
        hosts = {getattr(e, "host", None) or e.file for e in config}
        if config and not timeouts and not remote and len(hosts) >= min(2, len(job_nodes(facts, job)) or 2):
            findings.append(Finding(
                check="nccl_collective_failure", root_cause="user_code_error",
                message=f"job {job}: NCCL could not set up on {len(hosts)} host(s): its environment names network "
                        f"interfaces or HCAs the nodes do not have ({config[0].message[:120]})",
                culprits=job_culprits([job]), evidence=[log_evidence(e) for e in config[:3]],
                strength="symptom", confidence=confidence("symptom", corroborated=len(hosts) >= 2),
                suggested_actions=[log_owner(facts, job, "NCCL configuration (NCCL_SOCKET_IFNAME / NCCL_IB_HCA) names "
                                                         "interfaces these nodes do not have")[1]],
            ))
            continue
        usage = [e for e in others + [t for t in facts.job_events_of("traceback") if t.job == job]
                 if NCCL_USAGE_ERRORS.search(e.message)]
        if usage and not remote:
            findings.append(Finding(
                check="nccl_collective_failure", root_cause="user_code_error",
                message=f"job {job}: its ranks called collectives that do not match ({usage[0].message[:140]}): a bug "
                        "in the program's collective order or sizes, not the network",
                culprits=job_culprits([job]), evidence=[log_evidence(e) for e in usage[:3]],
                strength="symptom", confidence=confidence("symptom", corroborated=len(usage) >= 2),
                suggested_actions=[log_owner(facts, job, "mismatched collectives across ranks (run with "
                                                         "TORCH_DISTRIBUTED_DEBUG=DETAIL to see which)")[1]]))
            continue
        if not timeouts and not remote and any(e.job == job for e in facts.job_events_of("cuda_error", "cuda_oom")):
            continue  # the watchdog rethrowing a CUDA error (ECC, illegal address, OOM): that error's check explains it
        if not timeouts and not remote and all("NCCL WARN" in e.message for e in others):
            continue  # warnings alone (e.g. "Failed to open libibverbs.so" before a socket fallback) are no failure
        if not remote and barrier_only and len(ranks) <= 1:
            if _sibling_failed(facts, job):
                continue  # the rank it waited for died of its own failure (a save, an exception): that one explains it
            findings.append(
                Finding(
                    check="nccl_collective_failure",
                    root_cause="user_code_error",
                    message=(
                        f"job {job}: only rank {next(iter(ranks), '?')} timed out in a 1-element collective "
                        "(a barrier) with no network error: ranks issued collectives in different order"
                    ),
                    culprits=job_culprits([job]),
                    evidence=evidence,
                    strength="symptom", confidence=confidence("symptom"),
                    suggested_actions=[log_owner(facts, job, "collective desync in job code")[1]],
                )
            )
            continue
        if remote and not timeouts and _peer_stopped(facts, job):
            continue  # "remote process exited": a peer pod was stopped from outside; that stop is the question
        peer_nodes = [p for p in peers if facts.node(p) is not None]
        culprits = [f"node:{p}" for p in peer_nodes] + job_culprits([job])
        network = any(_NETWORK.search(e.message) for e in others) or any(
            e.kind == "net_event" for e in facts.job_events(job))
        if timeouts and not remote and not network:
            # Every rank waited and none names a network error or a peer: something stalled a rank (a GPU, a loader,
            # a deadlock, the fabric) and the logs cannot say which; a node fault read elsewhere ranks above this.
            findings.append(Finding(
                check="nccl_collective_failure", root_cause="inconclusive",
                message=f"job {job}: {len(timeouts)} NCCL timeout(s) on {len(ranks) or '?'} rank(s) with no network "
                        "error and no peer named: what stalled the collective cannot be told from what was read — read "
                        "next: NCCL_DEBUG=INFO output, the PyTorch flight recorder (TORCH_NCCL_TRACE_BUFFER_SIZE), "
                        "IB/NVLink error counters and the kernel logs of every node of the job",
                culprits=job_culprits([job]), evidence=evidence, strength="heuristic", confidence=0.5,
                suggested_actions=[]))
            continue
        findings.append(
            Finding(
                check="nccl_collective_failure",
                root_cause="interconnect_fault",
                message=f"job {job}: {len(timeouts)} NCCL timeout(s), {len(remote)} NCCL network error(s), "
                f"{len(others)} other NCCL error(s)",
                culprits=culprits,
                evidence=evidence,
                strength="symptom", confidence=confidence("symptom", corroborated=bool(peer_nodes)),
                suggested_actions=[],
            )
        )
    return findings + _endpoint_finding(facts, by_job)


def _endpoint_finding(facts: Facts, by_job: dict[str, list[JobLogEventBase]]) -> list[Finding]:
    """interconnect_fault naming the one host every failing RDMA connection involves (nccl_endpoints), with the
    jobs that logged those failures as its victims: drain it and resubmit them without it."""
    host = common_endpoint(e.message for events in by_job.values() for e in events if e.kind == "nccl_error")
    if host is None or facts.node(host) is None and facts.k8s_node(host) is None:
        return []
    quoted = [e for events in by_job.values() for e in events if e.kind == "nccl_error" and "GID" in e.message]
    jobs = list(dict.fromkeys(e.job for e in quoted if e.job))
    ref = node_ref(facts, host)
    lost, again = victims(facts, ref, f"RDMA connections to {host} fail", jobs=jobs)
    return [Finding(
        check="nccl_collective_failure", root_cause="interconnect_fault",
        message=f"every failing NCCL connection (queue pair setup timing out) has {host} at one end, from "
                f"{len({getattr(e, 'file', None) for e in quoted})} log(s): its NIC, cable or switch port, not the "
                "peers that report it",
        culprits=[ref.culprit, *lost], evidence=[log_evidence(e) for e in quoted[:4]],
        strength="symptom", confidence=confidence("symptom", corroborated=True),
        suggested_actions=take_out_of_service(facts, ref, f"RDMA connections to {host} time out") + again)]


_SIGNALLED = (137, 143)  # 128 + SIGKILL, 128 + SIGTERM
_NETWORK = re.compile(r"NET/|net_ib|net_socket|ibv_|IBV_|socket|Connection|connect|transport|RDMA|ucx|libfabric|"
                      r"NVLink|unhandled system error|remote", re.IGNORECASE)
"""Words of an NCCL error line that name the network (the transport, a socket, the HCA, a link)."""


_FAILED_KINDS = ("enospc", "checkpoint_write_failure", "traceback", "cuda_oom", "cuda_error", "fs_error")


def _sibling_failed(facts: Facts, job: str) -> bool:
    """Another log of the same run (a pod of the same workload; a Slurm job of the same run) shows the program
    failing on its own (ENOSPC, a failed save, an exception, CUDA): a rank left waiting in a barrier is its victim."""
    ns, _, name = job.rpartition("/")
    if ns:
        pod = next((p for p in facts.k8s_pods if p.namespace == ns and p.name == name), None)
        if pod is None or not pod.owner_name:
            return False
        others = [f"{ns}/{p.name}" for p in facts.k8s_pods
                  if p.namespace == ns and p.owner_name == pod.owner_name and p.name != name]
    else:
        others = [j for j in same_run_jobs(facts, job) if j != job]
    return any(e.kind in _FAILED_KINDS for o in others for e in facts.job_events(o))


def _peer_stopped(facts: Facts, job: str) -> bool:
    """The log is a pod's (``namespace/pod``) and another pod of its workload last terminated on SIGKILL or
    SIGTERM: NCCL's ``remote process exited or there was a network error`` is that peer's stop, not the fabric."""
    ns, _, name = job.rpartition("/")
    if not ns:
        return False
    pod = next((p for p in facts.k8s_pods if p.namespace == ns and p.name == name), None)
    if pod is None or not pod.owner_name:
        return False
    return any(c.last_terminated_exit_code in _SIGNALLED or c.exit_code in _SIGNALLED
               for p in facts.k8s_pods if p.owner_name == pod.owner_name and p.namespace == ns and p.name != name
               for c in p.containers)
