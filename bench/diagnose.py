"""Wall time of diagnosing every bundled incident (replay, built-in model, in-process gateway).

Run: python bench/diagnose.py [INCIDENTS_DIR] [--repeat N]
Prints one row per incident (result against incident.yaml, seconds) and the total.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# bench/gateway.py would shadow the gateway package when this folder leads sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from rich.console import Console
from rich.table import Table

from agent.diagnose import diagnose_path
from evals.incident import find_incidents, load_incident
from evals.scoring import score_case


def main() -> None:
    """Diagnose each incident ``--repeat`` times; report the median per incident and the total."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("dir", nargs="?", default=str(Path(__file__).resolve().parents[1] / "evals" / "incidents"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("WARDEN_HOME", tempfile.mkdtemp(prefix="warden-bench-"))
    table = Table(title=f"warden diagnose, built-in model, median of {args.repeat}")
    for col in ("incident", "expected", "got", "pass", "seconds"):
        table.add_column(col, justify="right" if col == "seconds" else "left")
    total, passed, paths = 0.0, 0, find_incidents(Path(args.dir))
    for path in paths:
        inc = load_incident(path)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            d = diagnose_path(path)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        total += med
        ok = score_case(inc.expected, d).passed
        passed += ok
        table.add_row(inc.id, inc.expected.root_cause, d.root_cause, "yes" if ok else "NO", f"{med:.3f}")
    table.add_row("total", "", "", f"{passed}/{len(paths)}", f"{total:.2f}")
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
