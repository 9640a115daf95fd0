"""Command line of the sandbox: ``python -m sandbox up|down|status|inject|clear``.

Prints JSON on standard output; a Warden error becomes one line on standard error and exit 2.

Example:
    python -m sandbox up --state-dir /tmp/warden-sandbox
    python -m sandbox inject gpu_xid79 --node gpu02
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from sandbox import cluster, faults
from sandbox.layout import Layout
from tools.errors import WardenError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sandbox", description="A real Slurm cluster on this host.",
                                epilog="example: python -m sandbox up --state-dir /tmp/warden-sandbox")
    p.add_argument("--state-dir", type=Path, default=None, help="state folder (default $WARDEN_HOME/sandbox or "
                   "~/.local/state/warden/sandbox)")
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the sandbox (idempotent)")
    up.add_argument("--no-install", action="store_true", help="never apt-get install missing packages")
    up.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the nodes (default 120)")
    up.add_argument("--prometheus-port", type=int, default=None, help="Prometheus port (default 9090)")
    down = sub.add_parser("down", help="stop the sandbox's daemons by pid file")
    down.add_argument("--purge", action="store_true", help="also delete the state folder")
    sub.add_parser("status", help="report daemons and node states")
    for name in ("inject", "clear"):
        f = sub.add_parser(name, help=f"{name} a fault")
        f.add_argument("fault", choices=faults.FAULTS)
        f.add_argument("--node", default=None)
        f.add_argument("--job", default=None)
        f.add_argument("--no-wait", action="store_true", help="do not wait for the symptom to show")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one sandbox command; return the exit code (0 ok, 1 not up, 2 error)."""
    args = _parser().parse_args(argv)
    started = time.monotonic()
    try:
        if args.command == "up":
            config = None
            if args.prometheus_port is not None:
                config = Layout.of(args.state_dir).load_config().model_copy(update={"prometheus_port": args.prometheus_port})
            st = cluster.up(args.state_dir, config=config, install=not args.no_install, timeout_s=args.timeout)
            out: object = {**st.model_dump(mode="json"), "elapsed_s": round(time.monotonic() - started, 2)}
        elif args.command == "down":
            out = {"stopped": cluster.down(args.state_dir, purge=args.purge)}
        elif args.command == "status":
            st = cluster.status(args.state_dir)
            print(json.dumps(st.model_dump(mode="json"), indent=2))
            return 0 if st.up else 1
        elif args.command == "inject":
            out = faults.inject(args.fault, args.state_dir, args.node, args.job, wait=not args.no_wait).model_dump(mode="json")
        else:
            rec = faults.clear(args.fault, args.state_dir, args.node, args.job, wait=not args.no_wait)
            out = {"cleared": rec.model_dump(mode="json") if rec else None}
    except WardenError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
