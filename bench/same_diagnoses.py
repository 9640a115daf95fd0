"""Whether two checkouts diagnose every bundled and blind incident alike (a performance change's proof).

Run:  python bench/same_diagnoses.py dump OUT.json [--only SUBSTRING] [--extra DIR]  (PYTHONPATH at one checkout)
      python bench/same_diagnoses.py compare BEFORE.json AFTER.json

``dump`` diagnoses every incident under evals/incidents and evals/blind/batch-* of the checkout it runs from
(agent.diagnose.diagnose_path: built-in model, in-process gateway) and writes, per incident, what a user is
told: root cause, confidence, culprits, summary, evidence, proposed actions (spec and commands), every finding
(check, root cause, message, culprits, evidence, strength, confidence, actions), the unreadable evidence, the
GPU hours lost, the check findings of ``run_checks`` alone, the first 2,000 GPU samples and the
``get_gpu_metrics`` read tool's first page. Run ids, plan hashes and times are left
out (they differ run to run). ``compare`` prints every incident whose record differs, field by field, and
exits 1 when any does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
ROOT = Path(os.environ.get("WARDEN_CHECKOUT") or Path(__file__).resolve().parents[1])


def _record(path: Path) -> dict:
    from agent.diagnose import diagnose_path
    from tools.checks import run_checks
    from tools.read.context import ReadContext
    from evals.incident import load_incident

    d = diagnose_path(path)
    out = d.model_dump(mode="json", exclude={"run_id", "providers"})
    for a in out.get("proposed_actions", []):
        a.pop("plan_hash", None)
    inc = load_incident(path)
    ctx = ReadContext.from_snapshot(inc.snapshot)
    run = run_checks(ctx.facts, ctx.checks)
    out["checks_alone"] = [f.model_dump(mode="json") for f in run.findings]
    out["checks_failed"] = [u.model_dump(mode="json") for u in run.failed]
    out["records_read"] = ctx.facts.records_read()
    out["gpu_samples"] = [s.model_dump(mode="json") for s in ctx.facts.gpu_samples][:2000]
    from tools.read.gpu import get_gpu_metrics

    out["gpu_metrics"] = get_gpu_metrics(ctx, limit=100).model_dump(mode="json")
    return out


def _incidents(only: str | None, extra: list[Path] = ()) -> list[Path]:
    from evals.incident import find_incidents

    paths = list(find_incidents(ROOT / "evals" / "incidents"))
    for batch in sorted((ROOT / "evals" / "blind").glob("batch-*")):
        paths += list(find_incidents(batch))
    for root in extra:  # generated clusters (bench/scale.py's snapshots), for changes only large inputs reach
        paths += sorted(find_incidents(root))
    return [p for p in paths if not only or only in str(p)]


def _key(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:  # an --extra incident outside the checkout
        return str(path)


def dump(out: Path, only: str | None, extra: list[Path] = ()) -> None:
    """Diagnose every incident and write the records as JSON."""
    os.environ.setdefault("WARDEN_HOME", tempfile.mkdtemp(prefix="warden-same-"))
    records = {}
    for path in _incidents(only, extra):
        key = _key(path)
        try:
            records[key] = _record(path)
        except Exception as e:  # noqa: BLE001 - an error is a result to compare too
            records[key] = {"error": f"{type(e).__name__}: {e}"}
    out.write_text(json.dumps(records, indent=1, sort_keys=True, default=str))
    print(f"{len(records)} incidents written to {out}")


def compare(before: Path, after: Path) -> int:
    """Print the differences; 0 when every incident's record is the same."""
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    differ = 0
    for key in sorted(set(a) | set(b)):
        if a.get(key) == b.get(key):
            continue
        differ += 1
        ra, rb = a.get(key) or {}, b.get(key) or {}
        fields = [f for f in sorted(set(ra) | set(rb)) if ra.get(f) != rb.get(f)]
        print(f"{key}: differs in {', '.join(fields)}")
        for f in fields[:3]:
            print(f"  before {f}: {json.dumps(ra.get(f))[:300]}")
            print(f"  after  {f}: {json.dumps(rb.get(f))[:300]}")
    print(f"{len(set(a) | set(b))} incidents compared, {differ} differ")
    return 1 if differ else 0


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # One string-hash order for both checkouts: a check that iterates a set of metric names (interconnect's
        # windowed counters) orders its evidence by it, which differs from one process to the next otherwise.
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--only")
    d.add_argument("--extra", type=Path, action="append", default=[],
                   help="also every incident under this directory (e.g. /tmp/warden-scale); repeatable")
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = ap.parse_args()
    if args.cmd == "dump":
        dump(args.out, args.only, args.extra)
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
