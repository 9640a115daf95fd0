"""Start-up cost of the `warden` CLI: wall and CPU time per command, and which heavy modules it imports.

Run: python bench/startup.py [--repeat N] [--root REPO] [--eval]

Each command runs ``--repeat`` times in a fresh interpreter (``python -c "from agent.cli.app import
main; main()" ARGS``, the console script's own call) with its own ``WARDEN_HOME``; the table shows the
median wall time, the median CPU time (user + system of the child) and, from one more run under
``python -X importtime``, the time spent importing (the sum of every top-level import's cumulative
time; importtime's own overhead makes it larger than in a plain run) and whether the agent stack
(pydantic_ai, openai, the gateway app) was imported. ``--root`` measures another checkout
(e.g. main before a change) with this script. ``--eval`` adds the whole bundled eval suite
(``warden eval --no-progress``, one interpreter per run, its own ``WARDEN_HOME`` each time). The
children get ``.pyc`` files as an installed package has them (``PYTHONDONTWRITEBYTECODE`` is dropped
for them). The load average is printed before and after: on a shared machine compare CPU times.
Targets (issue 10): ``--help`` within 0.3 s of CPU, a bundled incident diagnosed within 1.5 s of wall
time, on a quiet machine; the bundled eval faster than before.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("pydantic_ai", "openai", "gateway.app")
"""Modules that only commands running the agent (diagnose, act, eval, gateway serve) should import."""

INCIDENT = "evals/incidents/xid79-nccl-watchdog-other-rank"
COMMANDS: list[tuple[str, list[str]]] = [
    ("warden --help", ["--help"]),
    ("warden --version", ["--version"]),
    ("warden audit verify", ["audit", "verify"]),
    ("warden approvals list", ["approvals", "list"]),
    ("warden diagnose INCIDENT", ["diagnose", INCIDENT]),
]
EVAL = ["eval", "evals/incidents", "--no-progress"]
_CALL = "import sys; from agent.cli.app import main; sys.argv[0] = 'warden'; main()"
_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def _run(root: Path, args: list[str], home: Path, *, importtime: bool = False) -> tuple[float, float, str]:
    env = {**os.environ, "WARDEN_HOME": str(home), "PYTHONPATH": str(root), "COLUMNS": "100"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its .pyc files; so has the code measured
    cmd = [sys.executable] + (["-X", "importtime"] if importtime else []) + ["-c", _CALL, *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stderr


def _imports(stderr: str) -> tuple[float, set[str]]:
    """(seconds spent importing, over every top-level import of the run; names of every imported module)."""
    total, names = 0.0, set()
    for line in stderr.splitlines():
        m = _LINE.match(line)
        if m:
            names.add(m[4])
            if len(m[3]) == 1:  # a top-level import (one space after the bar): its cumulative time covers everything it pulled in
                total += int(m[2]) / 1e6
    return total, names


def main() -> None:
    """Measure each command and print the table."""
    from rich.console import Console
    from rich.table import Table

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--eval", action="store_true", help="also time the bundled eval suite (~15-30 s a run)")
    args = ap.parse_args()
    root = args.root.resolve()
    print(f"load average at the start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    home = Path(tempfile.mkdtemp(prefix="warden-bench-startup-"))
    _run(root, ["diagnose", INCIDENT], home)  # an audit log and a run to read; warms the .pyc caches
    table = Table(title=f"warden start-up ({root}), median of {args.repeat}")
    for col in ("command", "wall s", "CPU s", "imports s", "agent stack imported"):
        table.add_column(col, justify="left" if col in ("command", "agent stack imported") else "right")
    for label, argv in COMMANDS:
        runs = [_run(root, argv, home) for _ in range(args.repeat)]
        imp_s, names = _imports(_run(root, argv, home, importtime=True)[2])
        heavy = [h for h in HEAVY if h in names]
        table.add_row(label, f"{statistics.median(r[0] for r in runs):.2f}",
                      f"{statistics.median(r[1] for r in runs):.2f}", f"{imp_s:.2f}", ", ".join(heavy) or "no")
    if args.eval:  # each run in a fresh home: no earlier ledger or audit rows to read past
        runs = [_run(root, EVAL, Path(tempfile.mkdtemp(prefix="warden-bench-eval-"))) for _ in range(args.repeat)]
        table.add_row("warden eval (bundled)", f"{statistics.median(r[0] for r in runs):.2f}",
                      f"{statistics.median(r[1] for r in runs):.2f}", "", "")
    Console(width=100).print(table)
    load = os.getloadavg()[0]
    print(f"load average at the end: {load:.2f} on {os.cpu_count()} CPUs"
          + ("  (a busy machine: figures are high)" if load > 0.5 else ""))


if __name__ == "__main__":
    main()
