"""Issue 15 item 6: the input caps are settable in Warden's config file, not only the environment.

Before: ``inputs:`` in config.yaml was refused as an unknown field and a misspelt
``WARDEN_INPUT_LOG_MAX_LINE`` was silently ignored (the default cap applied). Now ``inputs:`` sets
each cap (the file wins, ``WARDEN_INPUT_*`` fills what it leaves out), a bad value is one line
naming the file and field (exit 2), and an unknown variable is refused by name. Real CLI, real
$WARDEN_HOME, real snapshot.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli.app import app
from test_input_caps import kernel_log, snapshot
from tools.errors import ConfigError
from tools.limits import input_limits
from tools.read.context import ReadContext

runner = CliRunner()


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("WARDEN_HOME", str(h))
    for k in [k for k in os.environ if k.startswith("WARDEN_INPUT_")]:
        monkeypatch.delenv(k)
    import agent.settings  # noqa: F401 - installs config.yaml as the caps' file source

    return h


def test_config_yaml_inputs_cut_a_long_log(home: Path, tmp_path: Path) -> None:
    (home / "config.yaml").write_text("inputs: {log_max_lines: 1000}\n")
    facts = ReadContext.from_snapshot(snapshot(tmp_path, {"kernel/gpu01.log": ("kernel-log", "gpu01",
                                                                               kernel_log(5000))})).facts
    (cut,) = facts.unreadable
    assert cut.kind == "cut" and cut.reason.startswith("cut: read the last 1,000 lines")
    assert "inputs.log_max_lines" in cut.reason


def test_the_file_wins_and_the_environment_fills_the_rest(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "config.yaml").write_text("inputs: {log_max_lines: 1000}\n")
    monkeypatch.setenv("WARDEN_INPUT_LOG_MAX_LINES", "2000")
    monkeypatch.setenv("WARDEN_INPUT_JOB_STATS_MAX_LINES", "3000")
    lim = input_limits()
    assert (lim.log_max_lines, lim.job_stats_max_lines) == (1000, 3000)
    (home / "config.yaml").write_text("inputs: {log_max_lines: 1500}\n")  # a changed file is read again
    assert input_limits().log_max_lines == 1500


@pytest.mark.parametrize("text, field", [
    ("inputs: {log_max_lines: .nan}\n", "inputs.log_max_lines"),
    ("inputs: {log_max_lines: 10}\n", "inputs.log_max_lines"),
    ("inputs: {max_file_bytes: 1e300}\n", "inputs.max_file_bytes"),
    ("inputs: {log_max_line: 1000}\n", "inputs.log_max_line"),  # misspelt: refused, not ignored
    ("inputs: 5\n", "inputs"),
])
def test_a_bad_value_in_the_file_is_one_line_naming_the_field(home: Path, tmp_path: Path, text: str,
                                                              field: str) -> None:
    (home / "config.yaml").write_text(text)
    snap = snapshot(tmp_path, {"kernel/gpu01.log": ("kernel-log", "gpu01", kernel_log(10))})
    r = runner.invoke(app, ["diagnose", str(snap)])
    assert r.exit_code == 2, r.output
    assert "config.yaml" in r.output and field in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_a_misspelt_variable_is_refused_by_name(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARDEN_INPUT_LOG_MAX_LINE", "1000")
    with pytest.raises(ConfigError, match="WARDEN_INPUT_LOG_MAX_LINE: not an input cap"):
        input_limits()


def test_config_show_lists_each_cap_and_where_it_came_from(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "config.yaml").write_text("inputs: {log_max_lines: 1000}\n")
    monkeypatch.setenv("WARDEN_INPUT_MAX_MANIFEST_ENTRIES", "500")
    r = runner.invoke(app, ["config", "show", "--output", "json"])
    assert r.exit_code == 0, r.output
    rows = {s["key"]: s for s in json.loads(r.stdout)["settings"]}
    assert rows["inputs.log_max_lines"]["value"] == 1000 and "config.yaml" in rows["inputs.log_max_lines"]["source"]
    assert rows["inputs.max_manifest_entries"]["value"] == 500
    assert rows["inputs.max_manifest_entries"]["source"] == "env WARDEN_INPUT_MAX_MANIFEST_ENTRIES"
    assert rows["inputs.log_max_bytes"]["source"] == "default"
