"""Issue 15 item 11: `warden act --approved ID --execute` exits non-zero when the action did not run.

A real failure, no sandbox needed: the live config runs Slurm's own client (`scontrol`, Debian's
slurm-client) against a slurm.conf whose controller port nothing listens on, so Slurm refuses every
command ("Unable to contact slurm controller"). The approval is requested by alice and approved by
the OS login user through the real CLI; the real execution path then runs the drain.

Before (issue 15): the failed execution printed ``[failed]`` and exited 0, and an approved action
the fleet bounds refused at execution time exited 0 as well; scripts took either for done.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli.app import app
from agent.identity import os_user

runner = CliRunner()
pytestmark = pytest.mark.skipif(shutil.which("scontrol") is None, reason="Slurm's client (scontrol) not installed")

SLURM_CONF = """ClusterName=wardentest
SlurmctldHost=localhost
SlurmctldPort=1
MessageTimeout=1
NodeName=gpu007 CPUs=1 State=UNKNOWN
PartitionName=gpu Nodes=gpu007 Default=YES
"""


def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fleet: str) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "slurm.conf").write_text(SLURM_CONF)  # port 1: the controller is unreachable
    (home / "config.yaml").write_text(f"approvers: {{{os_user()}: [oncall], alice: [oncall]}}\n{fleet}")
    (home / "warden.toml").write_text(f'cluster = "wardentest"\n[slurm]\nvia = "local"\n'
                                      f'slurm_conf = "{tmp_path / "slurm.conf"}"\n')
    monkeypatch.setenv("WARDEN_HOME", str(home))
    return home


def _approved_drain(node: str) -> str:
    from agent.settings import WardenSettings
    from tools.actions import plan_spec
    from tools.models.findings import ActionSpec

    s = WardenSettings.load()
    spec = ActionSpec(type="drain_node", node=node, reason="warden: Xid 79")
    plan = plan_spec(spec)
    req = s.open_approvals(s.open_audit()).request_approval(
        plan.plan_hash, spec.type, spec.model_dump(mode="json", exclude_none=True), "alice", "run-x", 600,
        commands=plan.commands)
    r = runner.invoke(app, ["approve", req.id])
    assert r.exit_code == 0 and f"by {os_user()}" in r.output, r.output
    return req.id


def test_a_failed_execution_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _home(tmp_path, monkeypatch, "fleet: {max_out_pct_per_group: 100}\n")  # a one-node group may be drained
    aid = _approved_drain("gpu007")
    r = runner.invoke(app, ["act", "--approved", aid, "--execute"])
    assert "[failed]" in r.output and "Unable to contact slurm controller" in r.output, r.output
    assert r.exit_code == 1
    again = runner.invoke(app, ["act", "--approved", aid, "--execute"])  # the approval was used: refused, exit 2
    assert again.exit_code == 2 and "Traceback" not in again.output


def test_an_approved_action_refused_at_execution_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _home(tmp_path, monkeypatch, "")  # default fleet bounds: draining 1 of 1 nodes (100% > 25%) is refused
    aid = _approved_drain("gpu007")
    r = runner.invoke(app, ["act", "--approved", aid, "--execute"])
    assert "[refused]" in r.output, r.output
    assert r.exit_code == 1
