"""Issue 14 item 5: tables fit 80 columns (wrapping or dropping low-value columns, and saying so);
`--output json` keeps the full values."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli.app import app
from agent.cli.tables import Column, allot_widths, fit_columns

REPO = Path(__file__).resolve().parents[4]
INCIDENTS = [REPO / "evals/incidents/xid79-nccl-watchdog-other-rank",
             REPO / "evals/incidents/k8s-device-plugin-marked-gpu-unhealthy-allocatable-7"]


def _plain(text: str) -> list[str]:
    return [re.sub(r"\x1b\[[0-9;]*m", "", ln) for ln in text.splitlines()]


@pytest.fixture()
def terminal(tmp_path: Path, monkeypatch) -> Path:
    """A terminal 80 columns wide (rich reads FORCE_COLOR and COLUMNS), a fresh WARDEN_HOME."""
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "80")
    return tmp_path / "home"


def test_low_priority_columns_go_first_and_widths_add_up():
    cols = [Column("id", 12, 9), Column("note", 30, 1), Column("cause", 18, 8), Column("when", 16, 5)]
    rows = [["a" * 12, "n" * 60, "gpu_hardware_fault", "2026-03-04 09:51"]]
    keep = fit_columns(cols, rows, 60)
    assert keep == [0, 2, 3]
    widths = allot_widths(cols, rows, keep, 60)
    assert sum(widths.values()) + 3 * len(keep) <= 60 and widths[0] == 12 and widths[2] == 18


def test_runs_list_fits_and_json_has_whole_ids(terminal: Path):
    for inc in INCIDENTS:
        assert CliRunner().invoke(app, ["diagnose", str(inc), "-o", "json"]).exit_code == 0
    out = CliRunner().invoke(app, ["runs", "list"])
    lines = _plain(out.stdout)
    assert out.exit_code == 0 and all(len(ln) <= 80 for ln in lines), out.stdout
    assert any("gpu_hardware_fault" in ln for ln in lines)
    runs = json.loads(CliRunner().invoke(app, ["runs", "list", "-o", "json"]).stdout)["runs"]
    assert len(runs) == 2 and all(len(r["id"]) == 32 for r in runs)
    assert any(r["id"][:12] in ln for r in runs for ln in lines)
    shown = CliRunner().invoke(app, ["runs", "show", runs[0]["id"][:8], "-o", "json"])
    assert json.loads(shown.stdout)["run_id"] == runs[0]["id"]


def test_gateway_usage_fits_80_columns(terminal: Path):
    assert CliRunner().invoke(app, ["diagnose", str(INCIDENTS[0]), "-o", "json"]).exit_code == 0
    out = CliRunner().invoke(app, ["gateway", "usage", "--by", "key,team,model,day,provider"])
    lines = _plain(out.stdout)
    assert out.exit_code == 0 and all(len(ln) <= 80 for ln in lines), out.stdout
    assert any("warden-builtin" in ln for ln in lines) and any("not shown at 80 columns" in ln for ln in lines)
    rows = json.loads(CliRunner().invoke(app, ["gateway", "usage", "-o", "json"]).stdout)["rows"]
    assert rows and {"requests", "cost_usd", "avg_latency_ms"} <= set(rows[0])


def test_approvals_list_fits_80_columns(terminal: Path):
    from agent.approvals import ApprovalStore

    terminal.mkdir(parents=True, exist_ok=True)
    store = ApprovalStore(terminal / "approvals.db")
    ids = [store.request_approval(f"{i:02x}" * 32, "resubmit_from_checkpoint",
                                  {"job": str(73412 + i), "exclude_nodes": ["gpu007", "gpu008"],
                                   "checkpoint": "/lustre/scratch/alice/llm13b/ckpt/step_032000"},
                                  "alice", f"run{i}" * 8, 3600).id for i in range(3)]
    out = CliRunner().invoke(app, ["approvals", "list"])
    lines = _plain(out.stdout)
    assert out.exit_code == 0 and all(len(ln) <= 80 for ln in lines), out.stdout
    assert all(any(i in ln for ln in lines) for i in ids)  # ids whole: they are what `warden approve` takes


def test_eval_tables_fit_80_columns(terminal: Path):
    out = CliRunner().invoke(app, ["eval", *map(str, INCIDENTS), "--no-progress"])
    lines = _plain(out.stdout)
    assert out.exit_code == 0, out.stdout
    assert all(len(ln) <= 80 for ln in lines), "\n".join(ln for ln in lines if len(ln) > 80)
    assert any("device_plugin_failure" in ln for ln in lines) and any("root-cause accuracy" in ln for ln in lines)
