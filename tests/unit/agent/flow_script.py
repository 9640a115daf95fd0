"""A paused-and-resumed run in separate processes (driven by test_deferred.py).

    python flow_script.py start   HOME   -> prints the pending approval id
    python flow_script.py approve HOME ID APPROVER
    python flow_script.py resume  HOME RUN_ID -> prints the runner's mutations and the outcome

The model is a FunctionModel that reads findings, asks to execute a drain of the node the findings
name, and, once the tool answers, gives its diagnosis.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from pydantic_ai import ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
REPO = HERE.parents[2]
SNAP = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank" / "snapshot"
NOW = datetime(2026, 11, 29, 10, 20, tzinfo=timezone.utc)
APPROVERS = {"bob": ["oncall"], "carol": ["admins"]}


def model(action: dict | None = None) -> FunctionModel:
    action = action or {"type": "drain_node", "node": "gpu007", "reason": "Xid 79"}

    def fn(messages, info: AgentInfo) -> ModelResponse:
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        names = [r.tool_name for r in returns]
        if "get_findings" not in names:
            return ModelResponse(parts=[ToolCallPart("get_findings", {}, tool_call_id="f1")])
        if "execute_action" not in names:
            return ModelResponse(parts=[ToolCallPart("execute_action", {"action": action}, tool_call_id="x1")])
        said = [str(r.content) for r in returns if r.tool_name == "execute_action"][-1]
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {
            "root_cause": "gpu_hardware_fault", "culprits": ["node:gpu007"], "confidence": 0.9,
            "evidence": [{"text": "GPU hardware error event(s) on gpu007"}],  # as get_findings returned it (the output validator checks)
            "summary": f"execute_action said: {said}"})])
    return FunctionModel(fn)


def setup(home: Path, runner=None):
    from agent.approvals import ApprovalStore
    from agent.audit import AuditLog
    from agent.execute import ExecutionSetup
    from policies import PolicyEngine
    from tools.read.context import ReadContext

    audit = AuditLog(home / "audit.db")
    approvals = ApprovalStore(home / "approvals.db", allowed_approvers=set(APPROVERS), audit=audit)
    ctx = ReadContext.from_snapshot(SNAP)
    return ctx, ExecutionSetup(engine=PolicyEngine.load(), approvals=approvals, audit=audit, requester="alice",
                               groups=["oncall"], approver_groups=APPROVERS, runner=runner, dry_run=False,
                               clock=lambda: NOW)


def main(argv: list[str]) -> None:
    from agent.runs import resume_run, start_run
    from slurm_fake import FakeSlurm

    phase, home = argv[0], Path(argv[1])
    os.environ["WARDEN_HOME"] = str(home)
    if phase == "start":
        ctx, s = setup(home, FakeSlurm())
        out = start_run(ctx, "Job 73412 failed. Why?", setup=s, model_override=model())
        meta = out.paused.metadata[out.paused.approvals[0].tool_call_id]
        print(json.dumps({"run_id": out.run_id, "approval_id": meta["approval_id"], "plan_hash": meta["plan_hash"]}))
    elif phase == "approve":
        _, s = setup(home)
        req = s.approvals.get(argv[2])
        s.approvals.approve(req.id, argv[3], req.plan_hash, now=NOW)
        print("approved")
    elif phase == "resume":
        slurm = FakeSlurm()
        ctx, s = setup(home, slurm)
        out = resume_run(argv[2], ctx, setup=s, model_override=model())
        print(json.dumps({"mutations": slurm.mutations, "summary": out.diagnosis.summary if out.diagnosis else None}))


if __name__ == "__main__":
    main(sys.argv[1:])
