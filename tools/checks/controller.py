"""check_controller_unreachable: Slurm commands could not reach slurmctld."""

from __future__ import annotations

from tools.checks.base import CheckConfig
from tools.checks.base import kernel_evidence
from tools.facts import Facts
from tools.knowledge.precedence import confidence
from tools.models.logs import SlurmMessageEvent
from tools.models.findings import Evidence, Finding

__all__ = ["ControllerConfig", "check_controller_unreachable"]


class ControllerConfig(CheckConfig):
    """Which error texts mean slurmctld itself is unreachable (not slurmdbd)."""

    controller_words: tuple[str, ...] = (
        "unable to contact slurm controller", "socket timed out", "zero bytes were transmitted",
        "communication connection failure", "connection refused",
    )


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
    if not errors and not log_lines and not down and not killed:
        return []
    hosts_killed = sorted({e.node for e in killed if e.node and e.process == "slurmctld"})
    hosts = sorted({e.controller for e in down if e.controller} | set(hosts_killed))
    evidence = [Evidence(text=e.message[:300], file=e.path) for e in errors[:4]]
    evidence += [Evidence(text=e.message[:300], file=e.file, line=e.line) for e in (down[:2] + log_lines[:3])]
    evidence += [kernel_evidence(e) for e in killed[:2]]
    return [Finding(
        check="controller_unreachable", root_cause="controller_unreachable",
        message=f"{len(errors)} recorded Slurm command(s) and {len(log_lines)} log line(s) could not reach slurmctld"
        + (f"; slurmctld on {', '.join(hosts)} is down" if hosts else "")
        + (f" (the kernel OOM killer ended {', '.join(sorted({e.process or '?' for e in killed}))})" if killed else ""),
        culprits=[f"node:{h}" for h in hosts], evidence=evidence,
        strength="state" if (errors or hosts) else "symptom",
        confidence=confidence("state" if (errors or hosts) else "symptom", corroborated=bool(errors and (hosts or log_lines))),
        suggested_actions=[],
    )]
