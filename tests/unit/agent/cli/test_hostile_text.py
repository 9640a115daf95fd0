"""Issue 15 item 9: the terminal is not an attack surface.

Cluster text (a kernel log line, a job name) and the question carry ANSI/OSC escapes, bidi
overrides, zero-width characters and rich markup; `warden diagnose` shows them escaped, in every
output format, and never reads them as markup (before: `[/]` in the question ended in a
MarkupError traceback from the panel title, and the escapes reached the terminal raw).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from agent.cli.app import app

BUNDLED = Path(__file__).resolve().parents[4] / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"
EVIL = "\x1b]0;pwned\x07\x1b[2J\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\ \u202eeurt\u202c gpu\u200b007 [bold red]x[/]"
RAW = ("\x1b]", "\x07", "\x1b[2J", "\u202e", "\u200b")


@pytest.fixture()
def hostile(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    inc = tmp_path / "incident"
    shutil.copytree(BUNDLED, inc)
    log = inc / "snapshot" / "kernel" / "gpu007.log"
    lines = log.read_text().splitlines(keepends=True)
    lines[26] = lines[26].rstrip("\n") + " " + EVIL + "\n"  # the Xid 79 line the diagnosis cites
    log.write_text("".join(lines))
    job = inc / "snapshot" / "slurm" / "scontrol_show_job_73412.txt"
    job.write_text(job.read_text().replace("JobName=llm13b-pt", "JobName=llm13b-pt[/]\u202e"))
    return inc


@pytest.mark.parametrize("fmt", ["rich", "markdown", "json", "yaml"])
def test_cluster_text_and_question_are_shown_escaped(hostile: Path, fmt: str):
    question = "Why did 73412 hang? [/] [bold]now[/bold] \x1b[31m\u202e"
    result = CliRunner().invoke(app, ["diagnose", str(hostile), "--output", fmt, "--question", question])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and result.stderr == ""
    for seq in RAW:
        assert seq not in result.stdout, (fmt, seq)
    if fmt == "json":
        doc = json.loads(result.stdout)
        assert doc["question"] == question  # exact for programs
        assert any(EVIL in e["text"] for e in doc["evidence"])
    elif fmt == "yaml":
        assert yaml.safe_load(result.stdout)["question"] == question
    else:
        shown = re.sub(r"\\(.)", r"\1", result.stdout) if fmt == "markdown" else result.stdout  # Markdown's escapes off
        assert "\\x1b]0;pwned\\x07" in shown and "\\u202e" in shown  # visible, not acted on
        assert "[bold red]x[/]" in shown  # markup printed as text


def test_markup_in_the_question_alone_never_raises(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    for q in ("[/]", "[link=file:///etc/passwd]x[/link]", "[[[", "\\[/]"):
        result = CliRunner().invoke(app, ["diagnose", str(BUNDLED), "-q", q])
        assert result.exit_code == 0 and "Traceback" not in result.output, (q, result.output)
        assert q in result.stdout
