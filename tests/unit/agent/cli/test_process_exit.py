"""agent.cli.startup: the console script exits without the interpreter's teardown, and nothing is lost.

Each case runs a fresh interpreter: the console script's entry point (``agent.cli.app:main``) or
``exit_process`` itself, and reads what a user or a later command sees: the exit code, stdout
through a pipe, files that atexit callbacks and running threads write, the audit trail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
INCIDENT = REPO / "evals/incidents/xid79-nccl-watchdog-other-rank"
_CALL = "import sys; from agent.cli.app import main; sys.argv[0] = 'warden'; main()"


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "WARDEN_HOME": str(home), "COLUMNS": "100"}


def _warden(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _CALL, *args], env=_env(home), capture_output=True, text=True,
                          timeout=120, cwd=REPO)


def _python(code: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], env=_env(home), capture_output=True, text=True, timeout=60)


def test_a_diagnosis_prints_everything_and_leaves_its_audit_trail(tmp_path: Path):
    done = _warden(["diagnose", str(INCIDENT), "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)  # the whole document arrived through the pipe
    assert d["root_cause"] == "gpu_hardware_fault" and "node:gpu007" in d["culprits"]
    from agent.audit import AuditLog

    log = AuditLog(tmp_path / "audit.db", create=False)
    kinds = [r.kind for r in log.records() if r.run_id == d["run_id"]]
    assert kinds[0] == "run_start" and "diagnosis" in kinds and kinds[-1] == "run_end"
    assert log.verify().ok
    shown = _warden(["runs", "show", d["run_id"], "--json"], tmp_path)  # the run store has it too
    assert shown.returncode == 0 and json.loads(shown.stdout)["root_cause"] == "gpu_hardware_fault"


@pytest.mark.parametrize(("args", "code"), [(["diagnose", "/nonexistent/incident"], 2), (["no-such-command"], 2),
                                            (["--version"], 0)], ids=["bad-path", "usage", "version"])
def test_exit_codes_are_the_commands_own(args: list[str], code: int, tmp_path: Path):
    done = _warden(args, tmp_path)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr


def test_nothing_read_is_exit_3(tmp_path: Path):
    snap = tmp_path / "snap"
    (snap / "slurm").mkdir(parents=True)
    (snap / "slurm" / "squeue.txt").write_bytes(b"")
    (snap / "manifest.yaml").write_text("captured_at: 2026-03-04T10:15:00Z\n"
                                        "files:\n  - {path: slurm/squeue.txt, format: squeue-text}\n")
    done = _warden(["diagnose", str(snap)], tmp_path / "home")
    assert done.returncode == 3 and "no evidence could be read" in done.stderr


def test_atexit_callbacks_run_and_buffered_output_is_flushed(tmp_path: Path):
    marker = tmp_path / "atexit.txt"
    done = _python(f"""
import atexit, sys
from agent.cli.startup import exit_process
atexit.register(lambda: open({str(marker)!r}, "w").write("ran"))
sys.stdout.write("x" * 100000)  # a pipe: block-buffered, not yet written
exit_process(5)
""", tmp_path)
    assert done.returncode == 5 and done.stdout == "x" * 100000 and marker.read_text() == "ran"


@pytest.mark.parametrize(("code", "status", "err"), [("None", 0, ""), ("'failed: disk full'", 1, "failed: disk full\n"),
                                                     ("3", 3, "")])
def test_the_status_is_what_sys_exit_gives(code: str, status: int, err: str, tmp_path: Path):
    done = _python(f"from agent.cli.startup import exit_process; exit_process({code})", tmp_path)
    assert (done.returncode, done.stderr) == (status, err)


def test_a_running_thread_is_waited_for(tmp_path: Path):
    out = tmp_path / "thread.txt"
    done = _python(f"""
import threading, time
from agent.cli.startup import exit_process
def work():
    time.sleep(0.5)
    open({str(out)!r}, "w").write("finished")
threading.Thread(target=work).start()
exit_process(4)
""", tmp_path)
    assert done.returncode == 4 and out.read_text() == "finished"


def test_sqlite_utils_gets_no_numpy_in_the_console_script_only(tmp_path: Path):
    done = _python("""
import sys
import agent.cli.startup as s
s.short_lived()
import sqlite_utils.db
print(sqlite_utils.db.np is None, "numpy" in sys.modules)
try:
    import numpy
    print(numpy.int64(7) + 1)
except ImportError:
    print("not installed")
""", tmp_path)
    first, second = done.stdout.split("\n")[:2]
    assert first == "True False", done.stderr
    assert second in ("8", "not installed")  # any other importer gets numpy as usual


def test_the_import_phase_pauses_the_collector_only_in_the_console_script(tmp_path: Path):
    done = _python("""
import gc
import agent.cli.startup as s
with s.import_phase():
    outside = gc.isenabled()
s.short_lived()
with s.import_phase():
    inside = gc.isenabled()
    import json
print(outside, inside, gc.isenabled(), gc.get_freeze_count() > 0)
""", tmp_path)
    assert done.stdout.split() == ["True", "False", "True", "True"], done.stderr
