"""An emulated Lustre exporter: the sandbox MDT's ``md_stats`` as Prometheus counters, on loopback.

Lustre cannot run here, so its ``lctl get_param mdt.*.md_stats`` output is a file the sandbox writes
(sandbox/emulated.py; the metadata_storm fault rewrites it). This script serves it the way a Lustre
exporter on the MDS does (metric and label names of the community lustre_exporter)::

    lustre_stats_total{component="mdt",operation="open",target="scratch-MDT0000"} 48211834

Run as a script (stdlib only)::

    python sandbox/lustre_exporter.py --md-stats <state>/lustre/scratch/md_stats --listen 9410

A real MDT's counters grow as operations are served; a file is a snapshot, so each counter is the
file's count spread evenly over its window (``count × (now − start) / elapsed``): it grows at the
file's average rate, which is what Warden's mdt_metadata_storm check computes from the same file,
and it jumps when a fault rewrites the file (a restart of the counters, as ``rate()`` handles).
"""

from __future__ import annotations

import argparse
import re
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

__all__ = ["render_metrics", "main"]

_ROW = re.compile(r"^(\w+)\s+(\d+) samples")
_TIME = re.compile(r"^(start_time|elapsed_time)\s+([\d.]+)")
_TARGET = re.compile(r"^mdt\.([\w-]+)\.md_stats=")


def render_metrics(text: str, now: float) -> str:
    """Prometheus exposition text for one md_stats output (empty counters for an unreadable one)."""
    target, start, elapsed, counts = "unknown", now, 0.0, {}
    for line in text.splitlines():
        if m := _TARGET.match(line):
            target = m[1]
        elif m := _TIME.match(line):
            start, elapsed = (float(m[2]), elapsed) if m[1] == "start_time" else (start, float(m[2]))
        elif m := _ROW.match(line):
            counts[m[1]] = int(m[2])
    share = max(now - start, 0.0) / elapsed if elapsed > 0 else 1.0
    out = ["# HELP lustre_stats_total Number of operations the filesystem has performed.",
           "# TYPE lustre_stats_total counter"]
    out += [f'lustre_stats_total{{component="mdt",operation="{op}",target="{target}"}} {round(n * share)}'
            for op, n in counts.items()]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Serve /metrics until killed."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--md-stats", required=True, type=Path)
    ap.add_argument("--listen", required=True, type=int, help="port on 127.0.0.1")
    args = ap.parse_args(argv)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            try:
                text = args.md_stats.read_text()
            except OSError:
                text = ""
            body = render_metrics(text, time.time()).encode()
            self.send_response(200 if self.path.startswith("/metrics") else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", args.listen), Handler).serve_forever()


if __name__ == "__main__":
    main()
