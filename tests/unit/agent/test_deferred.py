"""pydantic-ai deferred approval end to end: a run asks execute_action, pauses with
DeferredToolRequests (the pending approval stored with the plan hash), is approved and resumed by
other processes, and the action runs exactly once; denial and attempts to bypass are refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from flow_script import NOW, model, setup
from slurm_fake import FakeSlurm

from agent.runs import resume_run, start_run

SCRIPT = Path(__file__).resolve().parent / "flow_script.py"
REPO = Path(__file__).resolve().parents[3]


def _run(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_run_pauses_and_resumes_in_other_processes_after_approval(tmp_path):
    started = json.loads(_run("start", str(tmp_path)))
    assert _run("approve", str(tmp_path), started["approval_id"], "bob") == "approved"
    resumed = json.loads(_run("resume", str(tmp_path), started["run_id"]))
    assert resumed["mutations"] == [["scontrol", "update", "NodeName=gpu007", "State=DRAIN", "Reason=warden: Xid 79"]]
    assert "executed and verified" in resumed["summary"]
    again = json.loads(_run("resume", str(tmp_path), started["run_id"]))  # replaying the run cannot reuse it
    assert again["mutations"] == [] and "already used" in again["summary"]


def test_resume_while_pending_is_refused_and_denial_reaches_the_model(tmp_path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path))
    slurm = FakeSlurm()
    ctx, s = setup(tmp_path, slurm)
    out = start_run(ctx, "Job 73412 failed. Why?", setup=s, model_override=model())
    assert out.paused is not None and out.diagnosis is None
    aid = out.paused.metadata["x1"]["approval_id"]
    from agent.approvals import ApprovalNotGranted
    import pytest

    with pytest.raises(ApprovalNotGranted, match="still pending"):
        resume_run(out.run_id, ctx, setup=s, model_override=model())
    s.approvals.deny(aid, "bob", "not during the reservation", now=NOW)
    done = resume_run(out.run_id, ctx, setup=s, model_override=model())
    assert "not during the reservation" in done.diagnosis.summary and slurm.argv == []


def test_model_cannot_approve_by_changing_arguments_on_resume(tmp_path, monkeypatch):
    """Resumed with different arguments (a tampered history / override), the plan hash differs: refused."""
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path))
    slurm = FakeSlurm()
    ctx, s = setup(tmp_path, slurm)
    out = start_run(ctx, "Job 73412 failed. Why?", setup=s, model_override=model())
    aid = out.paused.metadata["x1"]["approval_id"]
    req = s.approvals.get(aid)
    s.approvals.approve(aid, "bob", req.plan_hash, now=NOW)
    from pydantic_ai import ToolApproved
    from agent.runs import deferred_results
    from agent.diagnose import run_agent
    from pydantic_ai import ModelMessagesTypeAdapter

    state = s.approvals.load_run_state(out.run_id)
    results = deferred_results(s.approvals, state.pending_tool_calls, now=NOW)
    other = {"action": {"type": "drain_node", "node": "gpu008", "reason": "Xid 79"}}
    results.approvals["x1"] = ToolApproved(override_args=other)
    done = run_agent(ctx, None, execution=s, audit=s.audit, run_id=out.run_id, model_override=model(),
                     message_history=ModelMessagesTypeAdapter.validate_json(state.messages_json),
                     deferred_tool_results=results)
    assert "refused" in done.diagnosis.summary and "does not match" in done.diagnosis.summary
    assert slurm.mutations == []


def test_execute_tool_absent_unless_enabled(tmp_path, monkeypatch):
    from agent.diagnose import build_agent

    assert "execute_action" not in [t for ts in build_agent().toolsets for t in getattr(ts, "wrapped", ts).tools]
    assert "execute_action" in [t for ts in build_agent(execution=True).toolsets for t in getattr(ts, "wrapped", ts).tools]
