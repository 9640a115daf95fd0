"""Issue 15 item 3's rule for what Warden runs, walked again: a resubmitted job runs as its owner.

Before: ``resubmit_from_checkpoint`` and ``resize_job`` ran ``sbatch --export=ALL,...`` on the owner's
batch script as whoever Warden runs as. A user whose job failed got their script run again as
Warden's identity (root, or the service account), with Warden's whole environment exported into the
job (``--export=ALL``: the variables holding Warden's approval and audit secrets, gateway and Slack
tokens). Now a job of another user is submitted for its owner (``--uid=<owner> --get-user-env``, only
the checkpoint variable exported) when Warden's Slurm identity is root, and refused
(``submit-as-owner``, nothing run) when it is not; Warden's own jobs are submitted as before.

The evidence is a bundled incident's (job 73412 belongs to alice); the policy, approvals and audit
log are real; the command runner is the in-memory Slurm of tests/unit/agent (no slurmctld here).
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from agent.approvals import ApprovalStore
from agent.audit import AuditLog
from agent.execute import ExecutionSetup
from policies import PolicyEngine
from tools.models.findings import ActionSpec
from tools.read.context import ReadContext

sys.path.insert(0, str(Path(__file__).parents[1] / "unit" / "agent"))
from slurm_fake import FakeSlurm  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SNAP = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank" / "snapshot"
CKPT = "/lustre/scratch/alice/llm13b/ckpt/step_006000"
NOW = datetime(2026, 11, 29, 10, 20, tzinfo=timezone.utc)
RESUBMIT = ActionSpec(type="resubmit_from_checkpoint", job="73412", exclude_nodes=["gpu007"], checkpoint=CKPT)


@pytest.fixture(scope="module")
def facts():
    return ReadContext.from_snapshot(SNAP).facts


def _run(tmp_path: Path, facts, slurm_user: str, spec: ActionSpec = RESUBMIT):
    audit = AuditLog(tmp_path / "audit.db")
    approvals = ApprovalStore(tmp_path / "approvals.db", allowed_approvers={"bob"}, audit=audit)
    slurm = FakeSlurm([n.name for n in facts.nodes])
    setup = ExecutionSetup(engine=PolicyEngine.load(), approvals=approvals, audit=audit, requester="carol",
                           groups=["oncall"], approver_groups={"bob": ["oncall"]}, runner=slurm, dry_run=False,
                           facts=facts, clock=lambda: NOW, slurm_user=slurm_user)
    out = setup.propose(spec)
    if out.status == "pending_approval":
        approvals.approve(out.approval_id, "bob", out.plan.plan_hash, now=NOW)
        out = setup.execute_approved(out.approval_id)
    return out, slurm


def test_root_submits_another_users_job_as_that_user_without_its_own_environment(tmp_path: Path, facts) -> None:
    out, slurm = _run(tmp_path, facts, "root")
    assert out.status == "executed", out.message
    (sbatch,) = [a for a in slurm.argv if a[0] == "sbatch"]
    assert "--uid=alice" in sbatch and "--get-user-env" in sbatch
    assert f"--export=WARDEN_RESUME_FROM={CKPT}" in sbatch
    assert not [a for a in sbatch if a.startswith("--export=ALL")], sbatch  # Warden's environment stays home
    assert "--exclude=gpu007" in sbatch


def test_a_service_account_cannot_run_another_users_script_as_itself(tmp_path: Path, facts) -> None:
    out, slurm = _run(tmp_path, facts, "warden")
    assert out.status == "refused" and out.refusal is not None and out.refusal.bound == "submit-as-owner"
    assert "belongs to alice" in out.message and "would run as warden" in out.message
    assert slurm.mutations == []


def test_resize_follows_the_same_rule(tmp_path: Path, facts) -> None:
    resize = ActionSpec(type="resize_job", job="73412", num_nodes=2, exclude_nodes=["gpu007"])
    out, slurm = _run(tmp_path, facts, "warden", resize)
    assert out.status == "refused" and slurm.mutations == []


def test_wardens_own_job_is_submitted_as_before(tmp_path: Path, facts) -> None:
    out, slurm = _run(tmp_path, facts, "alice")  # Warden's Slurm identity owns the job
    assert out.status == "executed", out.message
    (sbatch,) = [a for a in slurm.argv if a[0] == "sbatch"]
    assert not [a for a in sbatch if a.startswith("--uid")]
    assert f"--export=ALL,WARDEN_RESUME_FROM={CKPT}" in sbatch
