"""The DiagnosisView and its renderers: verdict first, openable paths, exact machine formats, hostile text inert."""

from __future__ import annotations

import io
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import yaml
from rich.console import Console

from agent.render import build_view, diagnosis_document, dump_json, dump_yaml, print_diagnosis, to_markdown
from agent.render.view import fit_culprits
from tools.models.findings import ActionSpec, Diagnosis, Evidence, Finding, PlannedAction

EVIL = "\x1b]0;pwned\x07\x1b[31m[bold red]boom[/] \u202egpu017\u200b [x](http://evil.example) <b>hi</b>"


def _diagnosis(**kw) -> Diagnosis:
    base = dict(
        question="Why did job 4242 hang? [/]", root_cause="gpu_hardware_fault",
        culprits=["node:gpu017", "job:4242"], confidence=0.93, summary="Xid 79 on gpu017. " + EVIL,
        gpu_hours_lost=12.5,
        evidence=[Evidence(text="NVRM: Xid 79 " + EVIL, file="kernel/gpu017.log", line=3,
                           at=datetime(2026, 3, 4, 9, 51, 58, tzinfo=timezone.utc)),
                  Evidence(text="DCGM_FI_DEV_XID_ERRORS=79", metric="DCGM_FI_DEV_XID_ERRORS", value=79)],
        proposed_actions=[PlannedAction(
            spec=ActionSpec(type="drain_node", node="gpu017"), plan_hash="ab" * 32, reversibility="reversible",
            description="drain gpu017: " + EVIL,
            commands=[["scontrol", "update", "NodeName=gpu017", "State=DRAIN", "Reason=warden: x (Xid 79) " + EVIL]])],
        findings=[Finding(check="nccl_collective_failure", root_cause="interconnect_fault", message="NCCL timeout",
                          confidence=0.5, evidence=[Evidence(text="watchdog", file="logs/4242/out", line=9)])],
        run_id="f" * 32)
    return Diagnosis(**(base | kw))


def _snapshot(tmp: Path) -> Path:
    root = tmp / "incident" / "snapshot"
    (root / "kernel").mkdir(parents=True)
    (root / "kernel" / "gpu017.log").write_text("a\nb\nc\n")
    (root / "manifest.yaml").write_text("files: []\n")
    return root


def _terminal(d: Diagnosis, width: int, root: Path | None = None, cwd: Path | None = None) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=True, color_system="truecolor")
    print_diagnosis(build_view(d, root=root, cwd=cwd), console)
    return buf.getvalue()


def _plain(ansi: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", ansi)


def test_headline_is_the_first_line_and_fits(tmp_path: Path):
    for width in (80, 200):
        first = _plain(_terminal(_diagnosis(), width)).splitlines()[0]
        assert first == "gpu_hardware_fault: node:gpu017, job:4242 · confidence 0.93 · 12.5 GPU-h lost"
    narrow = _plain(_terminal(_diagnosis(), 50)).splitlines()[0]
    assert narrow.startswith("gpu_hardware_fault: ") and len(narrow) <= 50  # one line even when squeezed
    many = _diagnosis(culprits=[f"node:gpu{i:03d}" for i in range(40)])
    shown = fit_culprits(build_view(many), 80)
    assert shown[-1].endswith("more") and len(build_view(many).headline(shown)) <= 80


def test_evidence_paths_open_from_the_current_directory_and_carry_their_time(tmp_path: Path):
    root = _snapshot(tmp_path)
    out = _plain(_terminal(_diagnosis(), 200, root=root, cwd=tmp_path))
    assert "2026-03-04 09:51:58Z  incident/snapshot/kernel/gpu017.log:3" in out
    assert (tmp_path / "incident/snapshot/kernel/gpu017.log").is_file()
    away = _plain(_terminal(_diagnosis(), 200, root=None))
    assert "kernel/gpu017.log:3" in away  # unknown snapshot: the recorded path, never a wrong one


def test_each_command_is_one_whole_line_at_any_width():
    for width in (40, 80, 200):
        lines = _plain(_terminal(_diagnosis(), width)).splitlines()
        cmds = [ln.strip() for ln in lines if ln.strip().startswith("scontrol update")]
        assert len(cmds) == 1 and cmds[0].endswith("'")
        assert "NodeName=gpu017 State=DRAIN $'Reason=warden: x (Xid 79) \\x1b]0;pwned" in cmds[0]


def test_hostile_text_is_inert_in_every_renderer():
    d = _diagnosis()
    term = _terminal(d, 80)
    for seq in ("\x1b]0;", "\x07", "\x1b[31m[bold", "\u202e", "\u200b"):
        assert seq not in term
    assert "[bold red]boom[/]" in _plain(term) and "\\x1b]0;pwned\\x07" in _plain(term)
    md = to_markdown(build_view(d))
    assert "\u202e" not in md and "\x1b" not in md
    prose = re.sub(r"```.*?```", "", md, flags=re.S)  # commands sit in code blocks, where nothing is markup
    assert "[x](http" not in prose and "<b>" not in prose  # no link, no HTML from cluster text
    assert "\\[x\\](http://evil.example)" in md


def test_markdown_commands_sit_in_a_fence_longer_than_any_backticks_inside():
    d = _diagnosis(proposed_actions=[PlannedAction(
        spec=ActionSpec(type="drain_node", node="n1"), plan_hash="cd" * 32, reversibility="reversible",
        description="drain n1", commands=[["echo", "```", "````x"]])])
    md = to_markdown(build_view(d))
    assert "   `````bash\n" in md and md.count("`````") == 2


def test_json_and_yaml_are_exact_versioned_and_harmless_on_a_screen(tmp_path: Path):
    d = _diagnosis()
    doc = diagnosis_document(d, snapshot=tmp_path)
    text = dump_json(doc)
    assert all(line.isprintable() for line in text.splitlines())
    back = json.loads(text)
    assert back["schema_version"] == 1 and back["snapshot"] == str(tmp_path)
    assert back["summary"] == d.summary and back["run_id"] == "f" * 32  # full values, exact characters
    assert back["proposed_actions"][0]["plan_hash"] == "ab" * 32
    assert back["evidence"][0]["at"] == "2026-03-04T09:51:58Z"
    ytext = dump_yaml(doc)
    assert "\u202e" not in ytext and "\x1b" not in ytext
    assert yaml.safe_load(ytext)["summary"] == d.summary


def test_unreadable_evidence_and_partial_runs_are_said():
    from tools.models.unreadable import Unreadable

    d = _diagnosis(stopped_by="model_requests: 9 > 8",
                   unreadable=[Unreadable(kind="file", path="slurm/squeue.json", reason="truncated JSON")])
    out = _plain(_terminal(d, 80))
    assert "could not read: slurm/squeue.json: truncated JSON" in out
    assert out.splitlines()[0].endswith("partial") and "Partial result: model_requests" in out
