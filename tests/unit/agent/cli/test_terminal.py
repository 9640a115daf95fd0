"""Issue 14's terminal test: `warden diagnose` and `warden policy check` in a real pseudo-terminal.

pexpect runs the console script in a pty of 80 and 200 columns (so rich, the spinner and
pydantic-ai all see a terminal); pyte, a VT100 emulator, turns the bytes into the screen the user
sees. Checked: the verdict is the screen's first line, nothing of the question is cut, every
command is one line of the byte stream (a terminal folds it visually but copies it whole), the
command `policy check` prints passes `bash -n` and splits into exactly the planned argv, and
pydantic-ai's banner never appears, with the variables that would hide it (CI, PYTEST_VERSION,
PYDANTIC_AI_NO_BANNER) removed from the child's environment.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")
pyte = pytest.importorskip("pyte")

REPO = Path(__file__).resolve().parents[4]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"
_ANSI = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])")


def _env(home: Path, cols: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_VERSION", "PYDANTIC_AI_NO_BANNER",
                                                            "COLUMNS", "LINES", "NO_COLOR", "TERM")}
    return {**env, "PYTHONPATH": str(REPO), "WARDEN_HOME": str(home), "TERM": "xterm-256color"}


def run_in_pty(args: list[str], home: Path, cols: int, cwd: Path = REPO) -> tuple[str, list[str]]:
    """(the byte stream as text, the rendered screen's lines) of ``warden ARGS`` at ``cols`` columns."""
    child = pexpect.spawn(sys.executable, ["-m", "agent.cli.app", *args], env=_env(home, cols), cwd=str(cwd),
                          dimensions=(400, cols), encoding="utf-8", codec_errors="replace", timeout=180)
    raw = child.read()
    child.close()
    assert child.exitstatus == 0, raw
    screen = pyte.Screen(cols, 400)
    stream = pyte.Stream(screen)
    stream.feed(raw.replace("\r\n", "\n").replace("\n", "\r\n"))
    lines = [ln.rstrip() for ln in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return raw, lines


def _logical(raw: str) -> list[str]:
    return [_ANSI.sub("", ln).rstrip("\r") for ln in raw.split("\n")]


@pytest.fixture(scope="module")
def diagnosis(tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("home")
    env = {**os.environ, "PYTHONPATH": str(REPO), "WARDEN_HOME": str(home)}
    out = subprocess.run([sys.executable, "-m", "agent.cli.app", "diagnose", str(INCIDENT), "-o", "json"], env=env,
                         capture_output=True, text=True, check=True, timeout=180).stdout
    return json.loads(out)


@pytest.mark.parametrize("cols", [80, 200])
def test_diagnose_in_a_terminal(cols: int, tmp_path: Path, diagnosis: dict):
    from agent.render.safe import shell_command

    raw, screen = run_in_pty(["diagnose", str(INCIDENT.relative_to(REPO))], tmp_path / "home", cols)
    assert "pydantic-ai" not in raw and "Logfire" not in raw and "openai:" not in raw  # no banner
    first = next(ln for ln in screen if ln.strip())
    assert screen[0] == first and first.startswith("gpu_hardware_fault: node:gpu007, job:73412")
    assert len(first) <= cols and "confidence 0.99" in first and "GPU-h lost" in first
    words = " ".join(" ".join(screen).split())
    assert " ".join(diagnosis["question"].split()) in words.replace("Q: ", "")  # the question, whole
    logical = [ln.strip() for ln in _logical(raw)]
    commands = [shell_command(argv) for a in diagnosis["proposed_actions"] for argv in a["commands"]]
    assert commands and all(cmd in logical for cmd in commands)  # each command: one whole line
    assert any(ln.endswith("/snapshot/kernel/gpu007.log:27") and ln.startswith("2026-11-29 09:21:37Z")
               for ln in logical)  # evidence: its time and a path that opens from here
    assert (REPO / "evals/incidents/xid79-nccl-watchdog-other-rank/snapshot/kernel/gpu007.log").is_file()


def test_the_command_policy_check_prints_pastes_into_bash(tmp_path: Path, diagnosis: dict):
    drain = next(a for a in diagnosis["proposed_actions"] if a["spec"]["type"] == "drain_node")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(drain["spec"]))
    raw, _ = run_in_pty(["policy", "check", str(plan)], tmp_path / "home", 80)
    lines = _logical(raw)
    start = next(i for i, ln in enumerate(lines) if re.match(r"\s*plan [0-9a-f]{16,64}:$", ln))
    pasted = lines[start + 1].strip()
    assert "(Xid 79)" in pasted
    assert subprocess.run(["bash", "-n", "-c", pasted]).returncode == 0
    words = subprocess.run(["bash", "-c", f"set -- {pasted}; printf '%s\\0' \"$@\""], capture_output=True,
                           text=True, check=True).stdout.split("\0")[:-1]
    assert words == drain["commands"][0]
