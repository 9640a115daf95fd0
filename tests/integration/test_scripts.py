"""The README's quick start and `scripts/demo.sh`, run as a new user runs them.

* `scripts/demo.sh evals/incidents/<another>` diagnoses that incident (with the installed venv).
* The quick start, taken literally from README.md, in a fresh `git clone` with a clean environment
  (no venv on PATH, no PYTHONPATH), ends with `warden` on the PATH and a diagnosis. It installs 80+
  packages, so it runs when ``WARDEN_TEST_INSTALL=1`` (scripts/test.sh sets it in CI, where pip's
  cache is already warm from the suite's own install); elsewhere it is skipped with that reason.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OTHER = "evals/incidents/metadata-wall-open-stat-storm"


def _venv_ready(venv: Path) -> bool:
    """Whether scripts/_venv.sh would leave ``venv`` alone (an install stamp newer than pyproject.toml)."""
    stamps = list(venv.glob(".warden-installed-*"))
    return any(s.stat().st_mtime >= (REPO / "pyproject.toml").stat().st_mtime for s in stamps)


def _clean_env(home: Path) -> dict[str, str]:
    """The caller's environment without any venv or PYTHONPATH, as a new shell has it."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "WARDEN_VENV", "WARDEN_GATEWAY_URL", "WARDEN_GATEWAY_KEY", "COLUMNS")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST")}
    venv_bin = str(Path(sys.prefix) / "bin")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env["WARDEN_HOME"] = str(home)
    return env


def test_demo_diagnoses_another_incident(tmp_path: Path):
    venv = Path(sys.prefix)
    if not _venv_ready(venv):
        pytest.skip(f"{venv} is not installed from this checkout's pyproject.toml (scripts/test.sh installs it); "
                    "demo.sh would reinstall it")
    env = {**_clean_env(tmp_path / "home"), "WARDEN_VENV": str(venv), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(["bash", "scripts/demo.sh", OTHER], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("metadata_wall: ") and "Traceback" not in proc.stderr
    wrong = subprocess.run(["bash", "scripts/demo.sh", "evals/incidents/no-such"], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=300)
    assert wrong.returncode == 2 and "no such incident directory" in wrong.stderr and "Traceback" not in wrong.stderr


def quick_start_block(readme: str) -> str:
    """The first ```bash block under '## Quick start' in the README."""
    section = readme.split("## Quick start", 1)[1]
    m = re.search(r"```bash\n(.*?)```", section, re.S)
    assert m, "README's quick start has no bash block"
    return m.group(1)


@pytest.mark.skipif(os.environ.get("WARDEN_TEST_INSTALL") != "1",
                    reason="installs Warden from scratch in a fresh clone (about a minute with a warm pip cache); "
                           "set WARDEN_TEST_INSTALL=1 (CI does, in scripts/test.sh)")
def test_readme_quick_start_in_a_fresh_clone(tmp_path: Path):
    clone = tmp_path / "warden"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=300)
    block = quick_start_block((clone / "README.md").read_text())
    script = f"set -euo pipefail\n{block}\necho \"@@ $(command -v warden)\"\nwarden --version\n" \
             f"echo @@demo; bash scripts/demo.sh {OTHER}\n"
    proc = subprocess.run(["bash", "-c", script], cwd=clone, env=_clean_env(tmp_path / "home"), capture_output=True,
                          text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "warden: installing Warden" in proc.stderr and "packages" in proc.stderr  # progress was shown
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("gpu_hardware_fault: node:gpu007")  # the quick start's own diagnosis
    assert f"@@ {clone}/.venv/bin/warden" in lines
    assert any(re.fullmatch(r"warden \d+\.\d+\.\d+\S*", ln) for ln in lines)
    assert lines[lines.index("@@demo") + 1].startswith("metadata_wall: ")
    shutil.rmtree(clone / ".venv", ignore_errors=True)
