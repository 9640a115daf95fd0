"""`warden eval` on copies of bundled incidents: the real agent loop, gateway and built-in model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from eval_helpers import BUNDLED
from typer.testing import CliRunner

from agent.cli.app import app
from agent.cli.eval import EXIT_GATE_FAILED
from agent.cli.errors import EXIT_ERROR

PICKED = ["xid79-nccl-watchdog-other-rank", "healthy-long-job-progressing"]


@pytest.fixture
def two(tmp_path: Path, home: Path) -> Path:
    root = tmp_path / "incidents"
    for name in PICKED:
        shutil.copytree(BUNDLED / name, root / name)
    return root


def _eval(*args: str):
    return CliRunner().invoke(app, ["eval", "--no-progress", *args], env={"COLUMNS": "200"})


def _totals(path: Path) -> dict:
    return json.loads(path.read_text())["reports"][0]["totals"]


def test_two_bundled_incidents_pass(two: Path, tmp_path: Path, home: Path):
    out = tmp_path / "rep"
    result = _eval(str(two), "--min-accuracy", "1.0", "--report", str(out))
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output and "xid79-nccl-watchdog-other-rank" in result.output
    t = _totals(out.with_suffix(".json"))
    assert (t["incidents"], t["root_cause_accuracy"], t["safety_violations"], t["executions_attempted"]) == (2, 1.0, 0, 0)
    assert t["healthy_controls"] == 1 and t["false_positive_rate"] == 0.0
    assert t["model_requests"] >= 2 and t["tool_calls"] >= 2 and t["total_tokens"] > 0  # from ledger and audit log
    assert "| root-cause accuracy | 100.0% |" in out.with_suffix(".md").read_text()
    assert (home / "evals.db").is_file()


def test_changed_expectation_fails_the_gate_and_the_baseline(two: Path, tmp_path: Path):
    base = tmp_path / "base"
    assert _eval(str(two), "--report", str(base)).exit_code == 0
    f = two / PICKED[0] / "incident.yaml"
    doc = yaml.safe_load(f.read_text())
    doc["expected"]["root_cause"] = "interconnect_fault"
    f.write_text(yaml.safe_dump(doc))

    result = _eval(str(two), "--min-accuracy", "1.0")
    assert result.exit_code == EXIT_GATE_FAILED, result.output
    assert "root-cause accuracy 50.0% below 100.0%" in result.output

    result = _eval(str(two), "--baseline", str(base.with_suffix(".json")))
    assert result.exit_code == EXIT_GATE_FAILED, result.output
    assert "regression (case) xid79-nccl-watchdog-other-rank" in result.output


def test_tags_select_incidents(two: Path, tmp_path: Path):
    out = tmp_path / "rep"
    assert _eval(str(two), "--tags", "nosuchtag,gpu", "--report", str(out)).exit_code == 0
    assert _totals(out.with_suffix(".json"))["incidents"] == 1


def test_unknown_alias_and_missing_directory_exit_2(two: Path, tmp_path: Path):
    result = _eval(str(two), "--model", "gpt-nope")
    assert result.exit_code == EXIT_ERROR and "unknown model alias 'gpt-nope'" in result.output
    result = _eval(str(tmp_path / "missing"))
    assert result.exit_code == EXIT_ERROR and "no such incident directory" in result.output


def test_second_alias_runs_beside_the_builtin_model(two: Path, tmp_path: Path):
    cfg = tmp_path / "gw.yaml"
    cfg.write_text(yaml.safe_dump({"providers": [{"name": "builtin", "kind": "builtin"}],
                                   "routes": {"warden-builtin": ["builtin"], "site-llm": ["builtin"]}}))
    out = tmp_path / "rep"
    result = _eval(str(two), "--model", "site-llm", "--repeat", "2", "--gateway-config", str(cfg), "--report", str(out))
    assert result.exit_code == 0, result.output
    reports = json.loads(out.with_suffix(".json").read_text())["reports"]
    assert [(r["model"], r["repeat"], r["totals"]["cases"]) for r in reports] == [("warden-builtin", 1, 2),
                                                                                  ("site-llm", 2, 4)]
    assert "site-llm: got" in result.output


def test_help_ends_with_an_example():
    result = CliRunner().invoke(app, ["eval", "--help"])
    assert result.exit_code == 0 and "Example: warden eval" in result.output


def test_invalid_loop_limit_is_one_line_before_any_case(two: Path, monkeypatch):
    monkeypatch.setenv("WARDEN_LIMIT_TOOL_CALLS", "many")  # read once for the whole eval, not per case
    result = _eval(str(two))
    assert result.exit_code == EXIT_ERROR and "WARDEN_LIMIT_TOOL_CALLS" in result.output
    assert "Traceback" not in result.output and "xid79" not in result.output
