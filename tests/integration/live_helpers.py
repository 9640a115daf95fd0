"""Shared pieces of the live-mode integration tests: the execution path with the tests' own
approver, running a proposed action through it (approving when the policy asks), and the
"sandbox left healthy" check.

These tests exercise what each action does to real Slurm (twice, to show a repeat is harmless), so
the Executor's fleet bounds are wide open and each call is its own run; the bounds, the modes and
the return-to-service gate have their own sandbox test (test_autonomy_fleet.py). A resume here is
preceded by the tests' operator override, as a person would record it."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from agent.approvals import ApprovalStore
from agent.audit import AuditLog
from agent.execute import ActionOutcome, ExecutionSetup
from agent.fleet import FleetBounds
from agent.gates import record_override
from policies import PolicyEngine
from sandbox import cluster
from tools.actions import WARDEN_PREFIX
from tools.facts import Facts
from tools.models.findings import ActionSpec
from tools.sources.local import LocalSource

__all__ = ["REQUESTER", "APPROVER", "OPEN_BOUNDS", "Executor", "wait_healthy", "cancel_jobs"]

OPEN_BOUNDS = FleetBounds(cooldown_s=0, max_out_per_group=1000, max_out_pct_per_group=100,
                          max_disruptive_per_hour=100000, max_remediations_per_node=100000)

REQUESTER = "warden-it"
"""Who Warden acts for in these tests (the policy principal)."""
APPROVER = "it-oncall"
"""The tests' own approver: an on-call member, not the requester (irreversible actions need a second person)."""


@dataclass
class Executor:
    """agent/execute.py's ExecutionSetup over a temporary audit log and approval store."""

    setup: ExecutionSetup
    approvals: ApprovalStore
    audit: AuditLog

    @classmethod
    def make(cls, tmp: Path, runner: LocalSource, facts: Facts | None) -> "Executor":
        audit = AuditLog(tmp / "audit.db")
        approvals = ApprovalStore(tmp / "approvals.db", allowed_approvers=[APPROVER], audit=audit)
        setup = ExecutionSetup(engine=PolicyEngine.load(), approvals=approvals, audit=audit, requester=REQUESTER,
                               approver_groups={APPROVER: ["oncall"]}, runner=runner, dry_run=False, facts=facts,
                               fleet=OPEN_BOUNDS)
        return cls(setup, approvals, audit)

    def run(self, spec: ActionSpec) -> ActionOutcome:
        """Propose ``spec``; when the policy wants an approval, approve that exact plan and execute it."""
        if spec.type in ("resume_node", "uncordon_node") and spec.node:
            record_override(self.audit, spec.node, APPROVER, "integration test: node back after the fault cleared")
        out = self.setup.propose(spec, run_id=uuid.uuid4().hex)
        if out.status == "pending_approval":
            assert out.approval_id and out.plan
            self.approvals.approve(out.approval_id, APPROVER, out.plan.plan_hash)
            out = self.setup.execute_approved(out.approval_id)
        return out


def cancel_jobs(slurm: LocalSource, job_ids: list[str]) -> None:
    """scancel what is still queued or running of ``job_ids``."""
    live = [j for j in job_ids if j]
    if live:
        try:
            slurm.run(["scancel", *live], timeout_s=15)
        except Exception:  # noqa: BLE001 - cleanup must go on; the health check below reports what is left
            pass


def _warden_drains(slurm: LocalSource) -> list[str]:
    out = slurm.run(["sinfo", "-R", "-h", "-o", "%n|%E"], timeout_s=15).decode()
    return [ln for ln in out.splitlines() if "|" in ln and ln.split("|", 1)[1].startswith(WARDEN_PREFIX)]


def wait_healthy(state_dir: Path, slurm: LocalSource, timeout_s: float = 90.0) -> None:
    """Resume Warden's drains left behind (failing the test if any), then wait until every node is
    idle and no job runs. Raises AssertionError with what is still wrong."""
    leftover = _warden_drains(slurm)
    for line in leftover:
        slurm.run(["scontrol", "update", f"NodeName={line.split('|')[0]}", "State=RESUME"], timeout_s=15)
    deadline = time.monotonic() + timeout_s
    while True:
        states = cluster.node_states(state_dir)
        running = slurm.run(["squeue", "-h", "-o", "%i %T"], timeout_s=15).decode().split("\n")
        running = [r for r in running if r.strip()]
        if all(s == "idle" for s in states.values()) and not running:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"sandbox not healthy: nodes {states}, jobs {running}")
        time.sleep(1.0)
    assert not leftover, f"Warden drains were left behind: {leftover}"
