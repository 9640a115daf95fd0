"""Issue 12's sandbox checks, against real Slurm: a GPU fault (gpu_xid79) in observe mode gives
findings and runs nothing; in recommend it waits for approval; the GPU diagnostic runs as a Slurm
step on the suspect node (the sandbox has no GPUs: a stand-in `dcgmi` prints real `dcgmi diag -j`
JSON from the node's emulated GPU state) and its failure becomes evidence; in execute the drain runs
and is verified; a fourth drain inside the window is refused with the rate-limit reason; a node a
person drained (no `warden:` prefix) is never resumed by act."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from agent.approvals import ApprovalStore
from agent.audit import AuditLog
from agent.autonomy import AutonomyConfig
from agent.execute import ActionOutcome, ExecutionSetup
from agent.fleet import FleetBounds
from agent.gates import record_override
from agent.live.act import collect_live, diagnose_live, live_specs
from agent.live.session import sandbox_config
from policies import PolicyConfig, PolicyEngine
from sandbox import cluster, dcgmi, faults
from sandbox.layout import Layout
from tests.integration.live_helpers import APPROVER, REQUESTER, cancel_jobs, wait_healthy
from tools.actions import WARDEN_PREFIX
from tools.models.findings import ActionSpec
from tools.sources.local import LocalSource


@pytest.fixture
def runner(state_dir: Path, tmp_path: Path) -> LocalSource:
    """Slurm commands against the sandbox, with the stand-in dcgmi on the job steps' PATH."""
    lay = Layout.of(state_dir)
    dcgmi.install(lay)
    return LocalSource(env={**cluster.env(state_dir), "PATH": f"{lay.bin}:{os.environ.get('PATH', '')}"}, cwd=tmp_path)


def _setup(tmp: Path, runner: LocalSource, facts, mode: str, audit: AuditLog | None = None) -> ExecutionSetup:
    tmp.mkdir(parents=True, exist_ok=True)
    audit = audit or AuditLog(tmp / "audit.db")
    approvals = ApprovalStore(tmp / "approvals.db", allowed_approvers=[APPROVER], audit=audit)
    # The sandbox has 4 nodes: let the count bound (3 per hour) decide, not the share bounds.
    engine = PolicyEngine.load(config=PolicyConfig(max_partition_gpu_share_pct=100))
    return ExecutionSetup(engine=engine, approvals=approvals, audit=audit, requester=REQUESTER,
                          approver_groups={APPROVER: ["oncall"]}, runner=runner, dry_run=False, facts=facts,
                          autonomy=AutonomyConfig(default=mode),  # type: ignore[arg-type]
                          fleet=FleetBounds(max_out_pct_per_group=100, max_out_per_group=3),
                          condition="gpu_hardware_fault")


def _propose(setup: ExecutionSetup, spec: ActionSpec) -> ActionOutcome:
    return setup.propose(spec, run_id=uuid.uuid4().hex)


def _reason(runner: LocalSource, node: str) -> str:
    """The node's drain reason ("" when none; sinfo prints "none")."""
    got = runner.run(["sinfo", "-h", "-n", node, "-o", "%E"]).decode().strip()
    return "" if got == "none" else got


def test_modes_diagnostic_rate_limit_and_other_owners(state_dir: Path, runner: LocalSource, tmp_path: Path) -> None:
    rec = faults.inject("gpu_xid79", state_dir)
    node = rec.node or "gpu02"
    drained: list[str] = []
    audit = AuditLog(tmp_path / "audit.db")
    try:
        run = diagnose_live(sandbox_config(state_dir), f"Job {rec.job} has logged nothing for minutes. Why?",
                            runner=runner, audit=False)
        d = run.diagnosis
        assert d is not None and d.root_cause == "gpu_hardware_fault" and f"node:{node}" in d.culprits
        drain = next(s for s in live_specs(d, run.ctx.facts, sandbox_config(state_dir), runner)
                     if s.type == "drain_node")

        observe = _propose(_setup(tmp_path / "o", runner, run.ctx.facts, "observe"), drain)
        assert observe.status == "observed" and observe.refusal and observe.refusal.bound == "observe-mode"
        assert not _reason(runner, node)  # nothing ran

        recommend = _propose(_setup(tmp_path / "r", runner, run.ctx.facts, "recommend"), drain)
        assert recommend.status == "pending_approval" and recommend.approval_id
        assert not _reason(runner, node)  # waits for a person

        # Before the drain, a diagnostic step can still start on the node (once the hung job is gone).
        cancel_jobs(LocalSource(env=cluster.env(state_dir)), [j for j in rec.jobs_submitted if j])
        ex = _setup(tmp_path, runner, run.ctx.facts, "execute", audit)
        diag = _propose(ex, ActionSpec(type="run_gpu_diagnostic", node=node))
        assert diag.status == "executed", diag.message
        assert "FAILED" in diag.verification.observed  # type: ignore[union-attr]
        assert any("GPU 2" in e.text and "GPU Memory" in e.text for e in diag.evidence)  # evidence for the node
        assert diag.execution and diag.execution.commands[0][:3] == ["srun", "--job-name=warden-dcgm-diag", f"--nodelist={node}"]

        done = _propose(ex, drain)
        assert done.status == "executed" and done.verification and done.verification.ok, done.message
        assert done.decision and done.decision.policy_ids == ["execute-mode-reversible"]
        assert _reason(runner, node).startswith(WARDEN_PREFIX)
        drained.append(node)
        # On the drained node a step can start only inside a maintenance reservation; the drain comes back.
        held_reason = _reason(runner, node)
        ex.facts = collect_live(sandbox_config(state_dir), runner=runner).ctx.facts
        again = _propose(ex, ActionSpec(type="run_gpu_diagnostic", node=node, level=1))
        assert again.status == "executed", again.message
        assert again.plan and again.plan.commands[0][:3] == ["scontrol", "create", "reservation"]
        assert _reason(runner, node) == held_reason
        assert "warden-diag" not in runner.run(["scontrol", "show", "reservation"]).decode()
        for other in [n for n in ("gpu01", "gpu03", "gpu04") if n != node][:2]:
            o = _propose(ex, ActionSpec(type="drain_node", node=other, reason="rate-limit test"))
            assert o.status == "executed", o.message
            drained.append(other)
        fourth = next(n for n in ("gpu01", "gpu02", "gpu03", "gpu04") if n not in drained)
        refused = _propose(ex, ActionSpec(type="drain_node", node=fourth, reason="rate-limit test"))
        assert refused.status == "refused" and refused.refusal and refused.refusal.bound == "rate-limit"
        assert refused.message == "rate limited: 3 drains in the last 1 h on partition gpu (limit 3)"
        assert not _reason(runner, fourth)

        # A person drains the fourth node; act never resumes it, even in execute mode with an override.
        runner.run(["scontrol", "update", f"NodeName={fourth}", "State=DRAIN", "Reason=admin: PSU swap"])
        record_override(audit, fourth, APPROVER, "try to resume a person's drain")
        fresh = collect_live(sandbox_config(state_dir), runner=runner).ctx.facts
        ex.facts = fresh
        back = _propose(ex, ActionSpec(type="resume_node", node=fourth))
        assert back.status == "refused" and back.refusal and back.refusal.bound == "owned-by-other", back.message
        assert _reason(runner, fourth) == "admin: PSU swap"
        # Warden's own drain of the faulty node stays until a diagnostic passes or a person overrides.
        held = _propose(ex, ActionSpec(type="resume_node", node=node))
        assert held.status == "refused" and held.refusal and held.refusal.bound == "resume-needs-diagnostic"
    finally:
        faults.clear("gpu_xid79", state_dir)
        slurm = LocalSource(env=cluster.env(state_dir))
        for n in ("gpu01", "gpu02", "gpu03", "gpu04"):
            if _reason(slurm, n) == "admin: PSU swap":
                slurm.run(["scontrol", "update", f"NodeName={n}", "State=RESUME"])
        ex2 = _setup(tmp_path / "cleanup", runner, collect_live(sandbox_config(state_dir), runner=runner).ctx.facts,
                     "execute", audit)
        ex2.fleet = FleetBounds(cooldown_s=0, max_out_per_group=100, max_out_pct_per_group=100)
        for n in drained:  # back through the gate: the operator's override is in the audit log
            record_override(audit, n, APPROVER, "sandbox test cleanup")
            out = _propose(ex2, ActionSpec(type="resume_node", node=n))
            assert out.status == "executed", out.message
    wait_healthy(state_dir, LocalSource(env=cluster.env(state_dir)))
