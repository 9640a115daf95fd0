"""get_findings(culprit=...): only findings about what was asked, however many others outrank them."""

from __future__ import annotations

from pathlib import Path

from tools.read import ReadContext, get_findings

SNAP = Path(__file__).resolve().parents[4] / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank" / "snapshot"


def test_culprit_filter_by_kind_name_or_bare_name():
    ctx = ReadContext.from_snapshot(SNAP)
    everything = get_findings(ctx, limit=50)
    node = next(c for f in everything.findings for c in f.culprits if c.startswith("node:"))
    for subject in (node, node.split(":", 1)[1]):
        only = get_findings(ctx, culprit=subject)
        assert only.total >= 1 and all(node in f.culprits for f in only.findings)
    assert get_findings(ctx, culprit="job:0").total == 0
