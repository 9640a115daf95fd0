"""Action plans: exact argv lists, stable hashes bound to parameters, execution only when authorized."""

from __future__ import annotations

import pytest

from tools.actions import ACTIONS, Authorization, build_action, plan_spec
from tools.actions.drain_node import DrainNode
from tools.actions.resubmit import ResubmitFromCheckpoint
from tools.errors import ActionError, CommandError, NotAllowedError
from tools.models.findings import ActionSpec
from tools.models.ids import ACTION_TYPES


class RecordingRunner:
    """A CommandRunner that records argv lists instead of touching a cluster (unit level only;
    the sandbox integration tests run the same actions against real Slurm)."""

    def __init__(self, fail: bool = False, node_state: str = "IDLE", reason: str | None = None) -> None:
        self.ran: list[list[str]] = []
        self.fail = fail
        self.node_state, self.reason = node_state, reason

    def run(self, argv, *, timeout_s=30.0, input_bytes=None) -> bytes:
        if list(argv[:3]) == ["scontrol", "show", "node"]:  # read-back, as scontrol 22.05 prints it
            extra = f"\n   Reason={self.reason} [root@2026-11-29T10:00:00]" if self.reason else ""
            return f"NodeName={argv[3]} Arch=x86_64 CoresPerSocket=8\n   State={self.node_state}{extra}\n".encode()
        self.ran.append(list(argv))
        if self.fail:
            raise CommandError(list(argv), 1, "slurm_update error: Invalid node name specified")
        return b""


def test_every_design_action_type_has_a_class():
    assert set(ACTIONS) == set(ACTION_TYPES)


def test_drain_renders_scontrol_with_warden_prefix():
    plan = DrainNode(node="gpu017", reason="GPU hardware fault (Xid 79)").plan()
    assert plan.commands == [["scontrol", "update", "NodeName=gpu017", "State=DRAIN",
                              "Reason=warden: GPU hardware fault (Xid 79)"]]
    assert plan.reversibility == "reversible"


def test_hostile_text_stays_one_argument():
    plan = DrainNode(node="gpu017", reason='x"; rm -rf / #\n$(reboot)').plan()
    (argv,) = plan.commands
    assert len(argv) == 5 and argv[-1] == 'Reason=warden: x"; rm -rf / # $(reboot)'


def test_resubmit_excludes_suspect_nodes_and_passes_checkpoint():
    plan = ResubmitFromCheckpoint(job="4242", exclude_nodes=["gpu017", "gpu003"],
                                  checkpoint="/lustre/ckpt/step_001200").plan()
    assert plan.commands[0] == ["scontrol", "write", "batch_script", "4242", "warden-resubmit-4242.sbatch"]
    assert plan.commands[1] == ["sbatch", "--parsable", "--exclude=gpu003,gpu017",
                                "--export=ALL,WARDEN_RESUME_FROM=/lustre/ckpt/step_001200",
                                "warden-resubmit-4242.sbatch"]
    assert plan.reversibility == "irreversible"


def test_plan_hash_changes_with_any_parameter():
    a = DrainNode(node="gpu017", reason="r").plan().plan_hash
    assert a == DrainNode(node="gpu017", reason="r").plan().plan_hash
    assert a != DrainNode(node="gpu018", reason="r").plan().plan_hash
    assert a != DrainNode(node="gpu017", reason="r2").plan().plan_hash


def test_execute_refuses_without_an_allow_for_this_exact_plan():
    action = DrainNode(node="gpu017", reason="r")
    runner = RecordingRunner()
    plan = action.plan()
    with pytest.raises(NotAllowedError):
        action.execute(Authorization(plan_hash=plan.plan_hash, decision="needs_approval"), runner)
    with pytest.raises(NotAllowedError):
        action.execute(Authorization(plan_hash=DrainNode(node="gpu018", reason="r").plan().plan_hash,
                                     decision="allow"), runner)
    assert runner.ran == []
    result = action.execute(Authorization(plan_hash=plan.plan_hash, decision="allow"), runner)
    assert result.ok and runner.ran == plan.commands


def test_failed_command_is_reported_not_raised():
    action = DrainNode(node="nope", reason="r")
    plan = action.plan()
    result = action.execute(Authorization(plan_hash=plan.plan_hash, decision="allow"), RecordingRunner(fail=True))
    assert not result.ok and "Invalid node name" in (result.error or "")


def test_build_action_names_missing_field():
    with pytest.raises(ActionError, match="drain_node: field node"):
        build_action(ActionSpec(type="drain_node"))
    planned = plan_spec(ActionSpec(type="resize_job", job="1"))
    assert planned.commands == [] and "num_nodes" in (planned.error or "")


@pytest.mark.parametrize("spec", [
    ActionSpec(type="run_gpu_diagnostic", node="n1"),
    ActionSpec(type="notify_owner", job="1", reason="why"),
    ActionSpec(type="resume_node", node="n1"),
    ActionSpec(type="hold_job", job="1"),
    ActionSpec(type="release_job", job="1"),
    ActionSpec(type="update_job", job="1", time_limit_min=60),
    ActionSpec(type="requeue_job", job="1"),
    ActionSpec(type="cancel_job", job="1"),
    ActionSpec(type="resize_job", job="1", num_nodes=2),
    ActionSpec(type="cordon_node", node="k1"),
    ActionSpec(type="uncordon_node", node="k1"),
    ActionSpec(type="drain_k8s_node", node="k1"),
    ActionSpec(type="evict_pod", pod="p", namespace="ns"),
])
def test_every_action_plans(spec):
    planned = plan_spec(spec)
    assert planned.error is None and len(planned.plan_hash) == 64
    assert all(isinstance(a, str) for argv in planned.commands for a in argv)


@pytest.mark.parametrize("spec", [
    ActionSpec(type="drain_node", node="gpu[001-128]"),          # a hostlist would drain the whole range
    ActionSpec(type="drain_node", node="gpu01,gpu02"),
    ActionSpec(type="drain_node", node="gpu01; reboot"),
    ActionSpec(type="cancel_job", job="4242 4243"),
    ActionSpec(type="cancel_job", job="-u alice"),
    ActionSpec(type="resubmit_from_checkpoint", job="1", checkpoint="/c,LD_PRELOAD=/tmp/x.so"),
    ActionSpec(type="resubmit_from_checkpoint", job="1", exclude_nodes=["gpu[1-9]"]),
    ActionSpec(type="evict_pod", pod="../../nodes/x", namespace="ns"),
    ActionSpec(type="cordon_node", node="Node_With_Caps"),
])
def test_targets_must_name_exactly_one_thing(spec):
    with pytest.raises(ActionError):
        build_action(spec)


def test_drain_does_not_overwrite_someone_elses_drain():
    action = DrainNode(node="gpu017", reason="Xid 79")
    auth = Authorization(plan_hash=action.plan().plan_hash, decision="allow")
    theirs = RecordingRunner(node_state="IDLE+DRAIN", reason="planned PSU swap")
    with pytest.raises(ActionError, match="drained by someone else"):
        action.execute(auth, theirs)
    assert theirs.ran == []
    ours = RecordingRunner(node_state="IDLE+DRAIN", reason="warden: GPU hardware fault (Xid 79)")
    result = action.execute(auth, ours)
    assert result.ok and ours.ran == [] and "already drained by Warden" in result.outputs[0]


def test_update_job_moves_the_begin_time_and_refuses_free_text():
    planned = plan_spec(ActionSpec(type="update_job", job="8801", start_time="now"))
    assert planned.error is None and planned.commands == [["scontrol", "update", "JobId=8801", "StartTime=now"]]
    bad = plan_spec(ActionSpec(type="update_job", job="8801", start_time="now; reboot"))
    assert bad.commands == [] and "start_time" in (bad.error or "")
