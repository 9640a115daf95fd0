"""Issue 10 item 5: commands that do not run the agent start without importing it.

Each command runs in a fresh interpreter through the console script's own entry point; the test
reads which modules were imported. Timings are not asserted here (bench/startup.py measures them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
AGENT_STACK = ("pydantic_ai", "openai", "gateway.app", "gateway.client", "agent.diagnose", "agent.limits",
               "cedarpy", "kubernetes", "fabric", "uvicorn")
_PROBE = """
import atexit, json, sys
sys.argv = ["warden", *json.loads(sys.argv[1])]
atexit.register(lambda: print("\\n@@" + json.dumps(sorted(sys.modules))))  # the first registered runs last
from agent.cli.app import main
main()
"""


def _run(args: list[str], home: Path) -> tuple[int, set[str], str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "WARDEN_HOME": str(home), "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args)], env=env, capture_output=True, text=True,
                          timeout=120)
    out, _, tail = proc.stdout.rpartition("\n@@")
    return proc.returncode, set(json.loads(tail)), out


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    from agent.audit import AuditLog

    h = tmp_path_factory.mktemp("home")
    AuditLog(h / "audit.db").append("run_start", {"question": "q"}, run_id="r1")  # a log to verify
    return h


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["audit", "verify"], ["approvals", "list"],
                                  ["runs", "list"], ["gateway", "--help"], ["config", "--help"]],
                         ids=lambda a: " ".join(a))
def test_starts_without_the_agent_stack(args: list[str], home: Path):
    code, modules, out = _run(args, home)
    assert code in (0, None), out
    assert not [m for m in AGENT_STACK if m in modules], f"{args} imported {[m for m in AGENT_STACK if m in modules]}"


def test_help_lists_every_command_without_importing_any(home: Path):
    from agent.cli.app import COMMANDS

    code, modules, out = _run(["--help"], home)
    assert all(c.name in out for c in COMMANDS)
    assert not [c.target.split(":")[0] for c in COMMANDS if c.target.split(":")[0] in modules]


def test_version_is_the_installed_one(home: Path):
    from importlib.metadata import version

    code, _, out = _run(["--version"], home)
    assert out.strip() == f"warden {version('warden')}"


def test_a_diagnosis_imports_the_agent_and_no_banner(home: Path):
    code, modules, out = _run(["diagnose", str(REPO / "evals/incidents/xid79-nccl-watchdog-other-rank")], home)
    assert code in (0, None) and "pydantic_ai" in modules
    # the built-in model's route has no LLM: no OpenAI SDK, no HTTP client session, no execution stack
    assert not [m for m in ("openai", "aiohttp", "agent.execute", "cedarpy") if m in modules]
    assert out.startswith("gpu_hardware_fault: node:gpu007") and "pydantic-ai" not in out and "Logfire" not in out
