"""Fleet bounds, autonomy modes, other owners and the return-to-service gate, on a real incident's
evidence with the real Cedar policy, approval store and audit log (the Slurm runner is the
in-memory FakeSlurm; the sandbox tests run the same against real Slurm)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from slurm_fake import FakeSlurm

from agent.approvals import ApprovalStore
from agent.audit import AuditLog
from agent.autonomy import AutonomyConfig, AutonomyRule
from agent.execute import ExecutionSetup, execution_order
from agent.fleet import FleetBounds
from agent.gates import record_override
from policies import PolicyEngine
from tools.models.findings import ActionSpec
from tools.read.context import ReadContext

REPO = Path(__file__).resolve().parents[3]
SNAP = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank" / "snapshot"
FAIL = (REPO / "tests" / "fixtures" / "dcgmi-diag-json" / "3.3-level2-fail-gpu2.json").read_bytes()
NOW = datetime(2026, 11, 29, 10, 20, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def facts():
    return ReadContext.from_snapshot(SNAP).facts


@pytest.fixture()
def env(tmp_path, facts):
    audit = AuditLog(tmp_path / "audit.db", clock=lambda: clock[0])
    approvals = ApprovalStore(tmp_path / "approvals.db", allowed_approvers={"bob"}, audit=audit)
    slurm = FakeSlurm([n.name for n in facts.nodes])
    clock = [NOW]
    setup = ExecutionSetup(engine=PolicyEngine.load(), approvals=approvals, audit=audit, requester="alice",
                           groups=["oncall"], approver_groups={"bob": ["oncall"]}, runner=slurm, dry_run=False,
                           facts=facts, clock=lambda: clock[0], condition="gpu_hardware_fault")
    return setup, slurm, audit, clock


def drain(node="gpu007"):
    return ActionSpec(type="drain_node", node=node, reason="Xid 79")


def test_hostile_model_2000_gpu_diagnostics_are_refused(env):
    setup, slurm, audit, _ = env
    start = time.monotonic()
    outs = [setup.propose(ActionSpec(type="run_gpu_diagnostic", node="gpu007"), run_id="hostile") for _ in range(300)]
    levels = [setup.propose(ActionSpec(type="run_gpu_diagnostic", node="gpu007", reason=str(i)), run_id="hostile")
              for i in range(50)]
    assert time.monotonic() - start < 60
    assert [o.status for o in outs].count("executed") == 1
    assert {o.refusal.bound for o in outs[1:]} == {"duplicate-plan"}
    assert len([a for a in slurm.argv if a[0] == "srun"]) == 1  # ran once, not 300 times (2,000: tests/adversarial)
    others = [setup.propose(ActionSpec(type="run_gpu_diagnostic", node=n), run_id="hostile")
              for n in ("gpu001", "gpu002", "gpu003", "gpu004", "gpu005", "gpu006", "gpu008", "gpu009", "gpu010")]
    assert [o.status for o in others].count("executed") == 7  # per-type cap: 8 diagnostics in one run
    assert others[-1].refusal.bound == "type-cap" and "limit 8" in others[-1].message
    assert all(o.status == "refused" for o in levels)


def test_observe_mode_gives_findings_only(env):
    setup, slurm, audit, _ = env
    setup.autonomy = AutonomyConfig(default="observe")
    out = setup.propose(drain())
    assert out.status == "observed" and out.refusal.bound == "observe-mode" and slurm.argv == []
    assert setup.approvals.list_pending(now=NOW) == []
    d = [r for r in audit.records() if r.kind == "policy_decision"][-1]
    assert d.payload["autonomy_mode"] == "observe" and d.payload["node_group"] == "gpu"
    assert not setup.autonomy.can_execute()


@pytest.mark.parametrize("mode,offered", [("observe", False), ("recommend", True), ("execute", True)])
def test_mutating_tool_offered_only_where_a_mode_can_execute(env, mode, offered):
    from pydantic_ai import ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from agent.runs import start_run

    setup, *_ = env
    setup.autonomy = AutonomyConfig(default=mode)
    seen: list[str] = []

    def fn(messages, info: AgentInfo) -> ModelResponse:
        seen.extend(t.name for t in info.function_tools)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {
            "root_cause": "healthy", "confidence": 0.1, "summary": "s"})])

    start_run(ReadContext.from_snapshot(SNAP), "q", setup=setup, model_override=FunctionModel(fn))
    assert ("execute_action" in seen) is offered and "get_findings" in seen


def test_execute_mode_runs_reversible_without_approval_but_not_irreversible(env):
    setup, slurm, audit, _ = env
    setup.autonomy = AutonomyConfig(rules=[AutonomyRule(group="gpu-xid", mode="execute", partition="gpu")])
    out = setup.propose(drain())
    assert out.status == "executed" and out.verification.ok and out.group.mode == "execute"
    assert out.decision.policy_ids == ["execute-mode-reversible"]
    resub = setup.propose(ActionSpec(type="resubmit_from_checkpoint", job="73412", exclude_nodes=["gpu007"]))
    assert resub.status == "pending_approval"
    started = [r for r in audit.records() if r.kind == "execution" and r.payload["event"] == "started"]
    assert started[0].payload["autonomy_mode"] == "execute" and started[0].payload["group"] == "gpu-xid"


def test_recommend_mode_waits_for_approval(env):
    setup, slurm, *_ = env
    out = setup.propose(drain())
    assert out.status == "pending_approval" and out.group.mode == "recommend" and slurm.argv == []


def test_other_owners_drains_are_never_touched(env, facts):
    setup, slurm, *_ = env
    f = facts.model_copy(deep=True)
    for n in f.nodes:
        if n.name == "gpu009":
            n.flags, n.reason, n.reason_user = ["DRAIN"], "NHC: check_hw_ib: No IB port is ACTIVE", "root"
        if n.name == "gpu010":
            n.flags, n.reason = ["DRAIN"], "NVSentinel: quarantined GpuXid 79"
    setup.facts = f
    for spec in (drain("gpu009"), ActionSpec(type="resume_node", node="gpu009")):
        out = setup.propose(spec)
        assert out.status == "refused" and out.refusal.bound == "owned-by-other" and "NHC" in out.message
    ext = setup.propose(ActionSpec(type="run_gpu_diagnostic", node="gpu010"))
    assert ext.status == "refused" and ext.refusal.bound == "external-owner" and "reporting instead" in ext.message
    assert slurm.argv == []


def _execute_mode(setup):
    setup.autonomy = AutonomyConfig(default="execute")


def test_resume_needs_a_passing_diagnostic_or_an_operator_override(env):
    setup, slurm, audit, clock = env
    _execute_mode(setup)
    assert setup.propose(drain(), run_id="r1").status == "executed"
    no = setup.propose(ActionSpec(type="resume_node", node="gpu007"), run_id="r1")
    assert no.status == "refused" and no.refusal.bound == "resume-needs-diagnostic"
    slurm.diag_json = FAIL
    bad = setup.propose(ActionSpec(type="run_gpu_diagnostic", node="gpu007"), run_id="r2")
    assert bad.status == "executed" and "FAILED" in bad.verification.observed
    assert any("GPU 2" in e.text and "GPU Memory" in e.text for e in bad.evidence)  # the failure is evidence
    assert setup.propose(ActionSpec(type="resume_node", node="gpu007"), run_id="r2").status == "refused"
    record_override(audit, "gpu007", "carol", "GPU 2 replaced, field diag passed")
    ok = setup.propose(ActionSpec(type="resume_node", node="gpu007"), run_id="r3")
    assert ok.status == "executed" and slurm.nodes["gpu007"][0] == "IDLE"


def test_passing_diagnostic_allows_resume(env):
    setup, slurm, *_ = env
    _execute_mode(setup)
    specs = execution_order([drain(), ActionSpec(type="run_gpu_diagnostic", node="gpu007")])
    assert [s.type for s in specs] == ["run_gpu_diagnostic", "drain_node"]  # diag first: it can still start
    setup.propose(drain(), run_id="a")
    assert setup.propose(ActionSpec(type="run_gpu_diagnostic", node="gpu007"), run_id="b").status == "executed"
    assert setup.propose(ActionSpec(type="resume_node", node="gpu007"), run_id="c").status == "executed"


def test_node_remediated_twice_in_a_week_goes_to_a_human(env):
    setup, slurm, audit, clock = env
    _execute_mode(setup)
    setup.fleet = FleetBounds(cooldown_s=0)
    for day in range(2):
        clock[0] = NOW + timedelta(days=day)
        assert setup.propose(drain(), run_id=f"d{day}").status == "executed"
        assert setup.propose(ActionSpec(type="run_gpu_diagnostic", node="gpu007"), run_id=f"g{day}").status == "executed"
        out = setup.propose(ActionSpec(type="resume_node", node="gpu007"), run_id=f"r{day}")
    assert out.status == "refused" and out.refusal.bound == "repeat-remediation" and "2 times" in out.message
    record_override(audit, "gpu007", "carol", "vendor replaced the board")
    assert setup.propose(ActionSpec(type="resume_node", node="gpu007"), run_id="r9").status == "executed"


def test_cooldown_per_node_and_condition(env):
    setup, slurm, audit, clock = env
    _execute_mode(setup)
    assert setup.propose(drain(), run_id="x").status == "executed"
    slurm.nodes["gpu007"] = ("IDLE", None)  # someone resumed it by hand
    clock[0] = NOW + timedelta(minutes=10)
    again = setup.propose(drain(), run_id="y")
    assert again.status == "refused" and again.refusal.bound == "cooldown" and "ran 10 min ago" in again.message
    setup.condition = "straggler_node"  # another condition is another investigation
    assert setup.propose(drain(), run_id="z").status == "executed"


def test_disruptive_actions_per_hour(env):
    setup, *_ = env
    _execute_mode(setup)
    setup.fleet = FleetBounds(max_disruptive_per_hour=2, max_out_per_group=10)
    got = [setup.propose(drain(n), run_id="h").status for n in ("gpu007", "gpu008", "gpu015")]
    assert got == ["executed", "executed", "refused"]


def test_group_share_bound(env, facts):
    setup, *_ = env
    _execute_mode(setup)
    small = AutonomyConfig(default="execute", rules=[AutonomyRule(group="rail-a", mode="execute",
                                                                  gpu_model="h100")])
    setup.autonomy = small
    out = setup.propose(drain(), run_id="s")
    assert out.group.name == "rail-a" and out.group.kind == "node group"
    setup.fleet = FleetBounds(max_out_pct_per_group=1.0)
    capped = setup.propose(drain("gpu008"), run_id="t")
    assert capped.status == "refused" and capped.refusal.bound == "group-share" and "node group rail-a" in capped.message


def test_a_diagnosis_keeps_at_most_20_distinct_plans():
    from pydantic_ai import ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from agent.diagnose import diagnose
    from agent.fleet import MAX_PLANS_PER_DIAGNOSIS

    hostile = ([{"type": "run_gpu_diagnostic", "node": "gpu007"}] * 2000
               + [{"type": "run_gpu_diagnostic", "node": f"gpu{i:03d}"} for i in range(1, 60)])

    def fn(messages, info: AgentInfo) -> ModelResponse:
        if not any(p.part_kind == "tool-return" for m in messages for p in m.parts):  # read first (output validator)
            return ModelResponse(parts=[ToolCallPart("get_findings", {}, tool_call_id="f1")])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {
            "root_cause": "gpu_hardware_fault", "culprits": ["node:gpu007"], "confidence": 0.9,
            "evidence": [{"text": "GPU hardware error event(s) on gpu007"}],
            "summary": "s", "proposed_actions": hostile})])

    d = diagnose(ReadContext.from_snapshot(SNAP), "q", model_override=FunctionModel(fn), audit=False)
    assert len(d.proposed_actions) == MAX_PLANS_PER_DIAGNOSIS == 20
    assert len({a.plan_hash for a in d.proposed_actions}) == 20


def test_diagnostic_on_a_warden_drained_node_runs_in_a_maintenance_reservation(env, facts):
    setup, slurm, *_ = env
    f = facts.model_copy(deep=True)
    reason = "warden: GPU hardware fault (Xid 79)"
    for n in f.nodes:
        if n.name == "gpu007":
            n.flags, n.reason = ["DRAIN"], reason
    setup.facts = f
    slurm.nodes["gpu007"] = ("IDLE+DRAIN", reason)
    setup.slurm_user = "warden"
    out = setup.propose(ActionSpec(type="run_gpu_diagnostic", node="gpu007"))
    assert out.status == "executed", out.message
    cmds = out.plan.commands
    assert cmds[0][:4] == ["scontrol", "create", "reservation", "ReservationName=warden-diag-gpu007"]
    assert "Users=warden" in cmds[0] and "Flags=MAINT,IGNORE_JOBS" in cmds[0]
    assert cmds[2][0] == "srun" and "--reservation=warden-diag-gpu007" in cmds[2]
    assert cmds[3] == ["scontrol", "update", "NodeName=gpu007", "State=DRAIN", f"Reason={reason}"]
    assert [a[:2] for a in slurm.mutations] == [["scontrol", "create"], ["scontrol", "update"], ["srun", "--job-name=warden-dcgm-diag"],
                                                ["scontrol", "update"], ["scontrol", "delete"]]
    assert slurm.nodes["gpu007"] == ("IDLE+DRAIN", reason)  # back to Warden's drain, reason unchanged


def test_a_failing_diagnostic_is_kept_as_evidence_for_the_next_collection(env, tmp_path):
    from agent.diag_results import result_artifacts
    from agent.live.record import write_snapshot
    from tools.facts import build_facts
    from tools.models.dcgm_diag import DcgmDiagReport

    setup, slurm, *_ = env
    setup.diag_dir = tmp_path / "diagnostics"
    slurm.diag_json = FAIL
    assert setup.propose(ActionSpec(type="run_gpu_diagnostic", node="gpu007")).status == "executed"
    (art,) = result_artifacts(setup.diag_dir, now=NOW + timedelta(hours=1))
    assert art.format == "dcgmi-diag-json" and art.node == "gpu007" and art.path == "gpu/dcgmi-diag-gpu007.json"
    assert art.command.startswith("srun --job-name=warden-dcgm-diag --nodelist=gpu007")
    (report,) = [r for r in build_facts([art], captured_at=NOW).other if isinstance(r, DcgmDiagReport)]
    assert report.node == "gpu007" and not report.passed and [f.gpu for f in report.failures if f.gpu is not None] == [2]
    snap = write_snapshot([art], tmp_path / "snap", captured_at=NOW, cluster="orion")  # recorded, replayed
    assert ReadContext.from_snapshot(snap).facts.other[0].failures == report.failures
    assert result_artifacts(setup.diag_dir, now=NOW + timedelta(days=2)) == []  # stale results are not evidence


def test_wardens_own_failing_diagnostic_job_is_never_acted_on(facts):
    from agent.live.act import live_specs
    from agent.live.config import LiveConfig
    from tools.actions import plan_spec
    from tools.models.findings import Diagnosis
    from tools.models.slurm import SlurmJob

    f = facts.model_copy(deep=True)
    f.jobs.append(SlurmJob(job_id="99001", name="warden-dcgm-diag", state="FAILED", nodes=["gpu007"]))
    f._index.clear()  # a deep copy keeps the lookup index an earlier test built on the shared facts
    specs = [ActionSpec(type="notify_owner", job="99001"), ActionSpec(type="notify_owner", job="73412")]
    d = Diagnosis(question="q", root_cause="gpu_hardware_fault", confidence=0.9, summary="s",
                  proposed_actions=[plan_spec(s) for s in specs])
    kept = live_specs(d, f, LiveConfig(), runner=None)  # type: ignore[arg-type]
    assert [s.job for s in kept] == ["73412"]
