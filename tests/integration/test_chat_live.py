"""`warden chat --live --execute` on the sandbox (issue 11 item 1, live): the session collects the
live cluster once, the first question diagnoses an injected Xid 79, a follow-up is answered from
that same evidence, `/plan` shows the drain's exact command, `/approve` by the login user drains the
node through policy, approval and audit (sinfo shows it), `/deny` refuses the irreversible plan with
a reason, `/evidence` lists the cited lines; the audit chain verifies. In-process, the way the
REPL calls the session (the pseudo-terminal path is tested on a bundled incident in tests/unit)."""

from __future__ import annotations

import getpass
from pathlib import Path

import yaml

from agent.audit import AuditLog
from agent.chat.commands import parse_command, run_command
from agent.chat.start import open_chat
from agent.live.session import write_sandbox_config
from sandbox import cluster, faults
from sandbox.layout import Layout
from tests.integration.live_helpers import cancel_jobs, wait_healthy
from tools.sources.local import LocalSource


def test_chat_live_execute_approves_denies_and_drains(state_dir: Path, tmp_path: Path, monkeypatch) -> None:
    user = getpass.getuser()
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump({"approvers": {user: ["oncall"]}}))
    write_sandbox_config(state_dir, home / "warden.toml")
    monkeypatch.setenv("WARDEN_HOME", str(home))
    nodes = Layout.of(state_dir).load_config().nodes
    slurm = LocalSource(env=cluster.env(state_dir))
    rec = faults.inject("gpu_xid79", state_dir)
    try:
        start = open_chat(live=True, config=home / "warden.toml", execute=True)
        s = start.session
        assert s.target.startswith("live:")
        d = s.ask(f"Job {rec.job} hangs with an NCCL watchdog timeout. Why?").diagnosis
        assert d is not None and d.root_cause == "gpu_hardware_fault" and f"node:{rec.node}" in d.culprits
        facts = s.ctx.facts
        other = next(n for n in nodes if n != rec.node)
        why = s.ask(f"why not {other}?")
        assert why.by == "warden" and f"{other} is not named" in why.text
        assert s.ctx.facts is facts  # the follow-up read the same collection

        def cmd(line: str) -> str:
            return "\n".join(run_command(parse_command(line), s.diagnosis, start.approvals, root=s.root))

        types = [a.spec.type for a in d.proposed_actions]
        drain, other_plan = types.index("drain_node") + 1, next(
            i for i, a in enumerate(d.proposed_actions, 1) if a.reversibility == "irreversible")
        assert f"NodeName={rec.node}" in cmd(f"/plan {drain}")
        done = cmd(f"/approve {drain}")
        assert f"approved by {user}" in done and "[executed]" in done and "verify: ok" in done, done
        assert cluster.node_states(state_dir)[rec.node].startswith(("drain", "drng"))
        denied = cmd(f"/deny {other_plan} not before the owner replies")
        assert f"by {user}: not before the owner replies" in denied, denied
        assert cmd("/evidence").startswith("Evidence:") and "kernel" in cmd("/evidence")
        s.close()

        log = AuditLog(home / "audit.db")
        assert log.verify().ok
        recs = [r for r in log.records() if r.run_id == d.run_id]
        kinds = [(r.kind, r.payload.get("event")) for r in recs]
        assert ("approval", "approve") in kinds and ("approval", "deny") in kinds
        assert ("execution", "started") in kinds and ("verification", None) in kinds
        log.close()
    finally:
        cancel_jobs(slurm, rec.jobs_submitted)
        faults.clear("gpu_xid79", state_dir)
        slurm.run(["scontrol", "update", f"NodeName={rec.node}", "State=RESUME"], timeout_s=15)
    wait_healthy(state_dir, slurm)
