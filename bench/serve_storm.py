"""`warden serve` under an alert storm: one HTTP POST of 1,000 Alertmanager alerts for 1,000 nodes.

Two shapes: one rule firing on 1,000 nodes (grouped: one investigation), and 1,000 different
alertnames (no grouping possible: the queue bound decides). Prints one table: the POST's wall time,
groups, investigations queued / merged / dropped / run, and the time until the queue is empty.
Runs over a bundled incident (snapshot target), with a temporary WARDEN_HOME.

    python bench/serve_storm.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _alert(name: str, node: str) -> dict:
    return {"status": "firing", "labels": {"alertname": name, "node": node, "xid": "79"},
            "annotations": {"summary": f"{name} on {node}"}, "startsAt": "2026-03-04T10:15:00Z",
            "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "http://127.0.0.1:9090/graph", "fingerprint": "0"}


def _run(label: str, names: list[str], home: Path) -> list[str]:
    from agent.runbooks.target import Target
    from agent.serve.server import build_server
    from tests.emulators.uvicorn_thread import serving

    rb = home / f"rb-{label}"
    rb.mkdir()
    (rb / "storm.yaml").write_text(yaml.safe_dump({
        "name": "storm", "match_re": {"alertname": "Storm.*"}, "question": "Xid on $count nodes: $nodes. Why?",
        "autonomy": "observe", "post": [{"file": f"{label}.jsonl"}], "group_by": ["alertname"]}))
    server = build_server(Target.of(snapshot=REPO / "evals/incidents/xid79-nccl-watchdog-other-rank"),
                          runbook_dirs=[rb], workers=2, max_queued=64, db=home / f"{label}.db")
    body = {"receiver": "warden", "status": "firing", "version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0,
            "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {}, "externalURL": "",
            "alerts": [_alert(names[i], f"gpu{i:04d}") for i in range(1000)]}
    with serving(server.asgi) as url:
        t0 = time.perf_counter()
        rep = httpx.post(f"{url}/alertmanager", json=body, timeout=120).json()
        post_s = time.perf_counter() - t0
        server.queue.join(3600)
        total_s = time.perf_counter() - t0
    st = server.queue.stats
    server.queue.close()
    return [label, "1000", str(rep["groups"]), str(rep["queued"]), str(rep["merged"]), str(rep["dropped"]),
            str(st["started"]), f"{post_s * 1000:.0f}", f"{total_s:.1f}"]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        os.environ["WARDEN_HOME"] = str(home)
        rows = [_run("one-rule", ["StormXid"] * 1000, home),
                _run("1000-rules", [f"Storm{i}" for i in range(1000)], home)]
    head = ["shape", "alerts", "groups", "queued", "merged", "dropped", "diagnoses", "POST ms", "drained s"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
