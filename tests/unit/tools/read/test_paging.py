"""Read tool results stay small at any cluster size: a size budget, a ``more`` cursor that pages
through everything exactly once, top-k counts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from sandbox.scale import ScaleSpec, generate
from tools.read import (ReadContext, get_accounting, get_cluster_overview, get_findings, get_gpu_metrics, get_jobs,
                        get_kernel_events, get_nodes, get_pending_jobs)
from tools.read.paging import MAX_RESULT_CHARS, cursor_offset, page, top_counts
from tools.read.slurm import NodeBrief


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> ReadContext:
    gen = generate(ScaleSpec(nodes=300, jobs=3000, fault="xid79"), tmp_path_factory.mktemp("scale"))
    return ReadContext.from_snapshot(gen.snapshot)


def test_page_fits_the_budget_and_names_the_next_cursor() -> None:
    items = [NodeBrief(name=f"gpu{i:04d}", state="IDLE", reason="x" * 100) for i in range(50)]
    shown, nxt = page(items, limit=40, budget=1000)
    assert 1 <= len(shown) < 40 and sum(len(i.model_dump_json()) + 1 for i in shown) <= 1000
    assert nxt == f"@{len(shown)}" and page(items, limit=100, more="@45")[1] is None
    assert page(items, limit=5, budget=1)[0] == items[:1]  # always at least one item
    with pytest.raises(ValueError, match="not a cursor"):
        cursor_offset("page 2")


def test_top_counts_keeps_the_largest_and_sums_the_rest() -> None:
    counts = top_counts(Counter({f"n{i}": i for i in range(1, 31)}), top=3)
    assert counts == {"n30": 30, "n29": 29, "n28": 28, "other": sum(range(1, 28))}


def test_every_read_tool_result_stays_under_the_budget_at_its_largest(ctx: ReadContext) -> None:
    results = [get_cluster_overview(ctx), get_findings(ctx, limit=50), get_jobs(ctx, limit=100),
               get_pending_jobs(ctx, limit=100), get_nodes(ctx, unhealthy_only=False, limit=100),
               get_accounting(ctx, limit=100), get_gpu_metrics(ctx, limit=100), get_kernel_events(ctx, limit=100)]
    for r in results:
        assert len(r.model_dump_json()) <= MAX_RESULT_CHARS, type(r).__name__


def test_the_cursor_pages_through_every_job_once(ctx: ReadContext) -> None:
    seen: list[str] = []
    more = None
    for _ in range(500):
        r = get_jobs(ctx, limit=100, more=more)
        seen += [j.job_id for j in r.jobs]
        more = r.next
        if more is None:
            break
    assert len(seen) == len(set(seen)) == r.total == len(ctx.facts.jobs)
