"""Live diagnosis and live execution: collect → diagnose → (refine plans with live checks) → execute.

``diagnose_live`` diagnoses what a live collection shows. ``live_specs`` completes proposed
resubmissions with the newest checkpoint that verifies against its manifest *now* (read through the
runner), since a checkpoint a log calls saved may since have been truncated or overwritten.
``act_live`` sends each proposed action through agent/execute.py (gates → policy → approval →
audit → execute → verify) with the live runner, the Kubernetes client of ``[kubernetes]`` and the
notification channels of ``[notify]``, in execution order (a GPU diagnostic before the drain of its
node); ``execute_approved_live`` is the second half after a human approved a pending action.

With ``[kubernetes]`` in warden.toml, every live collection (diagnose --live, record, act) also
lists the cluster's nodes, pods and events through the official client (KubeSource); a failed list
is reported like any failed fetch and the rest of the evidence is still used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

from agent.diagnose import DEFAULT_QUESTION, diagnose
from agent.execute import ActionOutcome, ExecutionSetup, execution_order
from agent.live.config import KubernetesConfig, LiveConfig
from agent.diag_results import result_artifacts
from agent.live.session import make_collector, make_runner
from agent.store import warden_home
from agent.live.record import context_of
from agent.settings import WardenSettings
from tools.actions.gpu_diagnostic import DIAG_JOB_NAME
from tools.actions.checkpoints import CheckpointCheck, newest_verified_checkpoint, verify_checkpoint
from tools.actions.base import CommandRunner
from tools.actions.notify_channels import Channels
from tools.errors import HTTPSourceError, SourceError
from tools.facts import Facts
from tools.live.collect import LiveCollector, unreadable_of
from tools.live.guard import GuardedRunner
from tools.models.findings import ActionSpec, Diagnosis
from tools.read.context import ProgressFn, ReadContext
from tools.sources.base import FetchRequest, RawArtifact
from tools.sources.kube import KubeSource

__all__ = ["LiveRun", "diag_dir", "kube_source", "collect_live", "diagnose_live", "live_specs", "act_live",
           "execute_approved_live", "setup_for"]

_RESUBMITS = ("resubmit_from_checkpoint", "resize_job")


@dataclass
class LiveRun:
    """One live collection and what was concluded from it."""

    collector: LiveCollector
    artifacts: list[RawArtifact]
    ctx: ReadContext
    diagnosis: Diagnosis | None = None
    checkpoint_checks: dict[str, list[CheckpointCheck]] = field(default_factory=dict)
    """job id → checkpoints verified while planning its resubmission (newest first)."""


def diag_dir() -> Path:
    """``$WARDEN_HOME/diagnostics``: the latest GPU diagnostic result per node."""
    return warden_home() / "diagnostics"


def kube_source(k: KubernetesConfig | None, *, kube: KubeSource | None = None) -> KubeSource | None:
    """The Kubernetes source ``[kubernetes]`` describes (or the one given), None without the table."""
    if kube is not None or k is None:
        return kube
    return KubeSource(kubeconfig=str(Path(k.kubeconfig).expanduser()) if k.kubeconfig else None, context=k.context,
                      in_cluster=k.in_cluster)


def _kube_artifacts(cfg: LiveConfig, src: KubeSource, collector: LiveCollector) -> list[RawArtifact]:
    namespaces = cfg.kubernetes.namespaces if cfg.kubernetes else []
    paths = ["/api/v1/nodes"] + ([f"/api/v1/namespaces/{ns}/{k}" for k in ("pods", "events") for ns in namespaces]
                                 or ["/api/v1/pods", "/api/v1/events"])
    out = []
    for url in paths:
        req = FetchRequest(format="k8s-json", url=url, timeout_s=cfg.bounds.timeout_s)
        if collector.on_progress:
            collector.on_progress(f"fetching {url}")
        try:
            art = src.fetch(req)
        except (HTTPSourceError, SourceError) as e:
            collector.failures.append((req.model_copy(update={"path": url}), str(e)))
            continue
        out.append(art.model_copy(update={"captured_at": collector.captured_at}))
    return out


def collect_live(cfg: LiveConfig, *, runner: CommandRunner | None = None, on_progress: ProgressFn | None = None,
                 kube: KubeSource | None = None) -> LiveRun:
    """Fetch one live snapshot (kept in memory, so it can also be recorded) and its ReadContext;
    with ``[kubernetes]`` (or ``kube``), the cluster's nodes, pods and events too."""
    collector = make_collector(cfg, runner=runner, on_progress=on_progress)  # type: ignore[arg-type]
    try:
        arts = collector.collect()
    finally:
        collector.close()
    src = kube_source(cfg.kubernetes, kube=kube)
    if src is not None:
        arts += _kube_artifacts(cfg, src, collector)
    arts += result_artifacts(diag_dir(), now=collector.captured_at)  # earlier GPU diagnostics: evidence
    return LiveRun(collector=collector, artifacts=arts,
                   ctx=context_of(arts, captured_at=collector.captured_at, cluster=cfg.cluster,
                                  checks=[c.model_dump() for c in cfg.checks], unreadable=unreadable_of(collector)))


def diagnose_live(cfg: LiveConfig, question: str | None = None, *, runner: CommandRunner | None = None,
                  on_progress: ProgressFn | None = None, kube: KubeSource | None = None, **kwargs: Any) -> LiveRun:
    """Collect live and diagnose (nothing is executed). ``kwargs`` go to agent.diagnose.diagnose."""
    run = collect_live(cfg, runner=runner, on_progress=on_progress, kube=kube)
    run.diagnosis = diagnose(run.ctx, question or DEFAULT_QUESTION, target=f"live:{cfg.cluster}", **kwargs)
    return run


def _workdir(facts: Facts, job: str) -> str | None:
    j = facts.job(job)
    if j and j.work_dir:
        return j.work_dir
    a = facts.acct_job(job)
    return getattr(a, "work_dir", None) if a else None


def _is_warden_diagnostic(facts: Facts, job: str) -> bool:
    j, a = facts.job(job), facts.acct_job(job)
    return DIAG_JOB_NAME in ((j.name if j else None), (a.name if a else None))


def _checkpoint_runner(runner: CommandRunner, cfg: LiveConfig, facts: Facts, job: str) -> GuardedRunner:
    """The runner checkpoint commands go through: every path under checkpoints.roots (else
    job_logs.roots), owned by the job's user (tools/live/guard.py)."""
    j, a = facts.job(job), facts.acct_job(job)
    owner = (j.user if j else None) or (getattr(a, "user", None) if a else None)
    return GuardedRunner(runner, cfg.checkpoints.roots or cfg.job_logs.roots, owner,
                         owner_check=cfg.job_logs.owner_check)


def live_specs(d: Diagnosis, facts: Facts, cfg: LiveConfig, runner: CommandRunner,
               checks: dict[str, list[CheckpointCheck]] | None = None) -> list[ActionSpec]:
    """The diagnosis' proposed actions, each resubmission pointed at the newest checkpoint that
    verifies now (sha256 and size against its manifest); a proposed checkpoint that fails is replaced.
    ``checks`` receives, per job, every checkpoint verified."""
    out: list[ActionSpec] = []
    ck = cfg.checkpoints
    for planned in d.proposed_actions:
        spec = planned.spec
        if spec.job and _is_warden_diagnostic(facts, spec.job):
            continue  # Warden's own GPU diagnostic step, failing on the bad node: not a user's job to act on
        if spec.type in _RESUBMITS and spec.job:
            wd = _workdir(facts, spec.job)
            runner_ck = _checkpoint_runner(runner, cfg, facts, spec.job)  # paths from cluster data: checked
            proposed = verify_checkpoint(runner_ck, spec.checkpoint, manifest_name=ck.manifest_name) if spec.checkpoint else None
            made = [proposed] if proposed else []
            if not (proposed and proposed.ok) and wd:
                best, made2 = newest_verified_checkpoint(runner_ck, ck.pattern.replace("{workdir}", wd),
                                                         manifest_name=ck.manifest_name)
                made += made2
                spec = spec.model_copy(update={"checkpoint": best.path if best else None})
            if checks is not None:
                checks[spec.job] = made
        out.append(spec)
    return out


def setup_for(cfg: LiveConfig, settings: WardenSettings, *, requester: str, execute: bool, facts: Facts | None,
              runner: CommandRunner | None = None, kube: KubeSource | None = None,
              diagnosis: Diagnosis | None = None) -> ExecutionSetup:
    """An ExecutionSetup acting on the live cluster with the settings' policy, approvals, audit log,
    autonomy modes and fleet bounds, the ``[kubernetes]`` client and the ``[notify]`` channels."""
    audit = settings.open_audit()
    src = kube_source(cfg.kubernetes, kube=kube)
    return ExecutionSetup(engine=settings.engine(), approvals=settings.open_approvals(audit), audit=audit,
                          requester=requester, groups=settings.groups_of(requester), approver_groups=settings.approvers,
                          runner=runner or make_runner(cfg.plan_input()), dry_run=not execute, facts=facts,
                          approval_ttl_s=settings.approval_ttl_s, kube=src.api_client() if src else None,
                          channels=Channels(cfg.notify) if cfg.notify else None, notify=cfg.notify,
                          autonomy=settings.autonomy, fleet=settings.fleet, diagnosis=diagnosis,
                          condition=diagnosis.root_cause if diagnosis else None, slurm_user=cfg.slurm.user,
                          diag_dir=diag_dir())


def act_live(cfg: LiveConfig, settings: WardenSettings, *, requester: str, execute: bool = False,
             question: str | None = None, runner: CommandRunner | None = None, on_progress: ProgressFn | None = None,
             on_outcome: Callable[[ActionOutcome], None] | None = None, kube: KubeSource | None = None,
             **kwargs: Any) -> tuple[LiveRun, list[ActionOutcome]]:
    """Diagnose live, then send each proposed action through the execution path.

    Without ``execute`` it is a dry run (plans and decisions only). Actions that need an approval
    come back ``pending_approval`` with an approval id: approve it (``warden approve ID``) and run
    ``execute_approved_live``.
    """
    run_runner = runner or make_runner(cfg.plan_input())
    run = diagnose_live(cfg, question, runner=run_runner, on_progress=on_progress, kube=kube, **kwargs)
    assert run.diagnosis is not None
    specs = live_specs(run.diagnosis, run.ctx.facts, cfg, run_runner, run.checkpoint_checks)
    setup = setup_for(cfg, settings, requester=requester, execute=execute, facts=run.ctx.facts, runner=run_runner,
                      kube=kube, diagnosis=run.diagnosis)
    outcomes = []
    for spec in execution_order(specs):
        o = setup.propose(spec, run_id=run.diagnosis.run_id)
        outcomes.append(o)
        if on_outcome:
            on_outcome(o)
    return run, outcomes


def execute_approved_live(cfg: LiveConfig, settings: WardenSettings, approval_id: str, *, requester: str,
                          runner: CommandRunner | None = None, facts: Facts | None = None,
                          kube: KubeSource | None = None) -> ActionOutcome:
    """Execute an approved action on the live cluster (the plan must still hash to the approved one).

    ``facts`` (the live evidence for target checks and the blast radius) are collected when not given.

    Raises:
        ApprovalError: not approved, expired, reused, changed plan, or an approver no longer allowed.
    """
    run_runner = runner or make_runner(cfg.plan_input())
    if facts is None:
        facts = collect_live(cfg, runner=run_runner, kube=kube).ctx.facts
    setup = setup_for(cfg, settings, requester=requester, execute=True, facts=facts, runner=run_runner, kube=kube)
    return setup.execute_approved(approval_id)
