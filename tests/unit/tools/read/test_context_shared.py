"""ReadContext parses and checks once, however many tool calls of one turn ask at the same moment.

A model's tool calls of one turn run in parallel threads (pydantic-ai runs sync tools in a pool); the
built-in model's first turn asks for findings six times. Each call must get the one shared result, not
parse the snapshot or run every check itself.
"""

from __future__ import annotations

import threading
from pathlib import Path

from tools.read import ReadContext

SNAP = Path(__file__).resolve().parents[4] / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank" / "snapshot"


def _at_once(fn, n: int = 6) -> list[object]:
    """``fn()`` from ``n`` threads released together; their results in thread order."""
    start = threading.Barrier(n)
    out: list[object] = [None] * n

    def run(i: int) -> None:
        start.wait()
        out[i] = fn()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_parallel_first_calls_share_one_facts_and_one_findings() -> None:
    ctx = ReadContext.from_snapshot(SNAP)
    facts = _at_once(lambda: ctx.facts)
    assert all(f is facts[0] for f in facts)  # parsed once: every caller holds the same Facts
    findings = _at_once(lambda: ctx.findings)
    assert findings[0] and all(f is findings[0] for f in findings)  # the checks ran once
    assert ctx.findings is findings[0]
