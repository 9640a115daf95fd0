"""The execution path on a real incident's evidence, the real Cedar policy, a real approval store and
audit log: plan -> policy -> approval -> execute -> verify, every step audited before it happens."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from slurm_fake import FakeSlurm

from agent.approvals import (
    ApprovalExpired,
    ApprovalNotGranted,
    ApprovalReused,
    ApprovalStore,
    ApproverNotAllowed,
    PlanHashMismatch,
    SelfApprovalRefused,
)
from agent.audit import AuditLog
from agent.execute import ExecutionSetup, propose_and_execute, sanitize_spec
from policies import PolicyEngine
from tools.models.findings import ActionSpec
from tools.read.context import ReadContext

REPO = Path(__file__).resolve().parents[3]
SNAP = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank" / "snapshot"
CKPT = "/lustre/scratch/alice/llm13b/ckpt/step_006000"
NOW = datetime(2026, 11, 29, 10, 20, tzinfo=timezone.utc)
APPROVERS = {"bob": ["oncall"], "carol": ["admins"], "alice": ["oncall"], "mallory": []}


@pytest.fixture(scope="module")
def facts():
    return ReadContext.from_snapshot(SNAP).facts


@pytest.fixture()
def env(tmp_path, facts):
    audit = AuditLog(tmp_path / "audit.db")
    approvals = ApprovalStore(tmp_path / "approvals.db", allowed_approvers={"bob", "carol", "alice"}, audit=audit)
    slurm = FakeSlurm([n.name for n in facts.nodes])
    clock = [NOW]
    setup = ExecutionSetup(engine=PolicyEngine.load(), approvals=approvals, audit=audit, requester="alice",
                           groups=["oncall"], approver_groups=APPROVERS, runner=slurm, dry_run=False, facts=facts,
                           clock=lambda: clock[0], slurm_user="root")  # root may resubmit alice's job as alice
    return setup, slurm, audit, approvals, clock


def drain(node="gpu007", reason="Xid 79"):
    return ActionSpec(type="drain_node", node=node, reason=reason)


def test_dry_run_decides_but_runs_nothing(env):
    setup, slurm, audit, approvals, _ = env
    setup.dry_run = True
    out = setup.propose(drain())
    assert out.status == "dry_run" and "would need approval" in out.message
    assert slurm.argv == [] and approvals.list_pending(now=NOW) == []
    assert [r.kind for r in audit.records()] == ["policy_decision"]


def test_reversible_drain_pauses_then_runs_after_approval(env):
    setup, slurm, audit, approvals, _ = env
    out = setup.propose(drain())
    assert out.status == "pending_approval" and slurm.argv == []
    assert out.decision.decision == "needs_approval" and out.blast.partition == "gpu"
    assert out.blast.partition_gpu_share_pct == pytest.approx(100 * 8 / 128)
    approvals.approve(out.approval_id, "bob", out.plan.plan_hash, now=NOW)
    done = setup.execute_approved(out.approval_id)
    assert done.status == "executed", done.message
    assert slurm.mutations == out.plan.commands
    assert slurm.nodes["gpu007"][0] == "IDLE+DRAIN"
    kinds = [r.kind for r in audit.records()]
    # decision, request, approve, (re-)decision with approver, consume, execution started/done, verification
    assert kinds == ["policy_decision", "approval_request", "approval", "policy_decision", "approval",
                     "execution", "execution", "verification"]
    started = [r for r in audit.records() if r.kind == "execution"][0]
    assert started.payload["event"] == "started" and started.payload["commands"] == out.plan.commands
    assert audit.verify().ok


def test_read_only_action_runs_without_approval(env):
    setup, slurm, *_ = env
    out = setup.propose(ActionSpec(type="run_gpu_diagnostic", node="gpu007"))
    assert out.status == "executed" and slurm.mutations[0][:3] == ["srun", "--job-name=warden-dcgm-diag", "--nodelist=gpu007"]


def test_approval_attacks_refused(env):
    setup, slurm, audit, approvals, clock = env
    resubmit = ActionSpec(type="resubmit_from_checkpoint", job="73412", exclude_nodes=["gpu007"], checkpoint=CKPT)
    out = setup.propose(resubmit)
    assert out.status == "pending_approval" and out.plan.reversibility == "irreversible"
    aid, h = out.approval_id, out.plan.plan_hash
    with pytest.raises(SelfApprovalRefused):
        approvals.approve(aid, "alice", h, now=NOW)
    with pytest.raises(ApproverNotAllowed):
        approvals.approve(aid, "mallory", h, now=NOW)
    with pytest.raises(ApprovalNotGranted):  # not approved yet: nothing runs
        setup.execute_approved(aid)
    approvals.approve(aid, "carol", h, now=NOW)
    changed = resubmit.model_copy(update={"exclude_nodes": []})
    with pytest.raises(PlanHashMismatch):  # changed parameters need a new approval
        setup.execute_approved(aid, changed)
    assert slurm.argv == []
    assert setup.execute_approved(aid).status == "executed"
    with pytest.raises(ApprovalReused):
        setup.execute_approved(aid)
    assert len(slurm.mutations) == 2  # scontrol write batch_script + sbatch, once


def test_expired_approval_refused(env):
    setup, slurm, _, approvals, clock = env
    out = setup.propose(drain())
    approvals.approve(out.approval_id, "bob", out.plan.plan_hash, now=NOW)
    clock[0] = NOW + timedelta(seconds=setup.approval_ttl_s + 1)
    with pytest.raises(ApprovalExpired):
        setup.execute_approved(out.approval_id)
    assert slurm.argv == []


def test_drain_rate_limit_counts_warden_drains_from_the_audit_log(env):
    setup, slurm, _, approvals, _ = env
    outcomes = []
    for node in ("gpu007", "gpu008", "gpu015", "gpu016"):
        out = setup.propose(drain(node))
        outcomes.append(out)
        if out.status == "pending_approval":
            approvals.approve(out.approval_id, "bob", out.plan.plan_hash, now=NOW)
            assert setup.execute_approved(out.approval_id).status == "executed"
    assert [o.blast.warden_drained_last_hour for o in outcomes[:3]] == [0, 1, 2]
    # the fleet bound refuses the fourth before any policy or approval, and says why, as data
    last = outcomes[-1]
    assert last.status == "refused" and last.refusal.bound == "rate-limit"
    assert last.message == "rate limited: 3 drains in the last 1 h on partition gpu (limit 3)"
    assert last.refusal.counts["drained"] == 3 and slurm.mutations.count(["scontrol", "update", "NodeName=gpu016",
                                                                          "State=DRAIN", "Reason=warden: Xid 79"]) == 0


def test_cedar_drain_rate_limit_still_holds_behind_the_fleet_bound(env):
    setup, slurm, _, approvals, _ = env
    setup.fleet = setup.fleet.model_copy(update={"max_out_per_group": 100})
    outcomes = []
    for node in ("gpu007", "gpu008", "gpu015", "gpu016"):
        out = setup.propose(drain(node))
        outcomes.append(out)
        if out.status == "pending_approval":
            approvals.approve(out.approval_id, "bob", out.plan.plan_hash, now=NOW)
            assert setup.execute_approved(out.approval_id).status == "executed"
    assert [o.blast.warden_drained_last_hour for o in outcomes] == [0, 1, 2, 3]
    assert outcomes[-1].status == "denied" and "drain-rate-limit" in outcomes[-1].decision.policy_ids


def test_partition_share_limit_counts_nodes_already_out(env, facts):
    setup, *_ = env
    down = facts.model_copy(deep=True)
    for n in down.nodes:
        if n.name in ("gpu001", "gpu002", "gpu003"):
            n.state, n.flags = "DOWN", []
    setup.facts = down
    out = setup.propose(drain("gpu007"))
    assert out.blast.partition_gpu_share_pct == pytest.approx(25.0)
    assert out.status == "pending_approval"
    down.nodes[[n.name for n in down.nodes].index("gpu004")].state = "DOWN"
    out = setup.propose(drain("gpu007"), run_id="another-run")  # within one run the same plan is a duplicate
    assert out.status == "denied" and "drain-partition-share-limit" in out.decision.policy_ids


def test_other_users_jobs_and_gpu_hours_killed(env):
    setup, *_ = env
    out = setup.propose(ActionSpec(type="cancel_job", job="73440"))  # frank's running 4-node job
    assert out.blast.other_users_jobs_touched == 1
    assert out.blast.running_gpu_hours_killed == pytest.approx(32 * 27410 / 3600, rel=1e-3)
    assert out.status == "pending_approval"
    setup.engine = PolicyEngine.load(config=setup.engine.config.model_copy(update={"max_running_gpu_hours_killed": 100}))
    out = setup.propose(ActionSpec(type="cancel_job", job="73440"), run_id="r2")
    assert out.status == "denied" and "gpu-hours-killed-limit" in out.decision.policy_ids


@pytest.mark.parametrize("spec, problem", [
    (ActionSpec(type="drain_node", node="gpu[001-016]"), "not a single node name"),
    (ActionSpec(type="drain_node", node="gpu099"), "not in the evidence"),
    (ActionSpec(type="drain_node", node="gpu007; reboot"), "not a single node name"),
    (ActionSpec(type="cancel_job", job="73412 73440"), "not a Slurm job id"),
    (ActionSpec(type="cancel_job", job="99999"), "not in the evidence"),
    (ActionSpec(type="resubmit_from_checkpoint", job="73412", checkpoint=CKPT + ",LD_PRELOAD=/tmp/x.so"), "plain absolute path"),
    (ActionSpec(type="resubmit_from_checkpoint", job="73412", checkpoint="/tmp/evil/step_1"), "was not saved"),
    (ActionSpec(type="resubmit_from_checkpoint", job="73412", exclude_nodes=["gpu[001-016]"]), "excluded node"),
    (ActionSpec(type="evict_pod", pod="x/../../nodes", namespace="default"), "DNS-1123"),
])
def test_targets_not_in_the_evidence_or_of_the_wrong_shape_are_denied(env, spec, problem):
    setup, slurm, audit, *_ = env
    out = setup.propose(spec)
    assert out.status == "denied" and out.decision.policy_ids == ["warden-target-check"]
    assert problem in out.message and slurm.argv == []
    assert [r.kind for r in audit.records()] == ["policy_decision"]


def test_reason_is_sanitized_before_planning():
    spec = sanitize_spec(drain(reason="bad\x1b[31m GPU\nState=RESUME\r\x00 " + "x" * 500))
    assert "\x1b" not in spec.reason and "\n" not in spec.reason and len(spec.reason) <= 200


def test_propose_and_execute_over_a_diagnosis(env, tmp_path, monkeypatch):
    from agent.diagnose import diagnose

    setup, slurm, audit, approvals, _ = env
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    d = diagnose(ReadContext.from_snapshot(SNAP), "Job 73412 failed. Why?", audit=audit)
    outs = propose_and_execute(d, engine=setup.engine, approvals=approvals, audit=audit, requester="alice",
                               groups=["oncall"], runner=slurm, dry_run=True, facts=setup.facts)
    assert [o.spec.type for o in outs] == [a.spec.type for a in d.proposed_actions]
    assert all(o.status in ("dry_run", "denied") for o in outs) and slurm.argv == []
    assert audit.verify().ok


def test_recent_warden_drains_in_the_evidence_count_too(env, facts):
    setup, *_ = env
    f = facts.model_copy(deep=True)
    for n in f.nodes:
        if n.name in ("gpu008", "gpu015", "gpu016"):
            n.flags, n.reason = ["DRAIN"], "warden: GPU hardware fault (Xid 79)"
            n.reason_time = f.captured_at - timedelta(minutes=20)
    setup.facts = f
    out = setup.propose(drain("gpu007"))
    assert out.status == "refused" and out.refusal.bound == "rate-limit" and out.refusal.counts["drained"] == 3
    for n in f.nodes:  # drained by someone else, or more than an hour ago: not Warden's recent drains
        if n.name == "gpu008":
            n.reason = "admin: PSU swap"
        if n.name == "gpu015":
            n.reason_time = f.captured_at - timedelta(hours=2)
    assert setup.propose(drain("gpu007"), run_id="r2").blast.warden_drained_last_hour == 1
