"""`warden report` on a bundled GPU incident (real snapshot, real parsers, the built-in model): HTML,
Markdown and valid PNGs; the timeline in time order; cluster text escaped; a 10,000-node fleet
aggregated to a bounded heat map."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from agent.cli.app import app
from agent.report import report_target, write_report
from agent.report.gpu_grid import GpuGrid, gpu_grid, worst_nodes
from agent.report.heatmap import draw_heatmap
from agent.report.timeline import build_timeline
from tools.models.findings import Diagnosis, Evidence

REPO = Path(__file__).resolve().parents[4]
INCIDENT = REPO / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def xid79(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    mp = pytest.MonkeyPatch()
    mp.setenv("WARDEN_HOME", str(home))
    try:
        d, facts, snap = report_target(str(INCIDENT), audit=False)
        out = home / "report"
        files = write_report(d, facts, out, snapshot=snap, now=datetime(2026, 11, 29, 11, 0, tzinfo=timezone.utc))
        yield d, facts, files
    finally:
        mp.undo()


def _valid_png(p: Path) -> tuple[int, int]:
    assert p.read_bytes()[:8] == PNG_MAGIC, p
    with Image.open(p) as im:
        im.verify()
    with Image.open(p) as im:
        return im.size


def test_writes_html_markdown_and_valid_pngs(xid79):
    d, _, files = xid79
    assert d.root_cause == "gpu_hardware_fault" and "node:gpu007" in d.culprits
    names = sorted(p.name for p in files.images)
    assert names == ["gpu-fleet.png", "gpu-heatmap.png", "timeline.png"]
    for p in files.images:
        w, h = _valid_png(p)
        assert w > 300 and h > 150 and p.stat().st_size > 5_000
    html = files.html.read_text()
    md = files.markdown.read_text()
    for name in names:
        assert f'src="{name}"' in html and f"]({name})" in md
    assert "gpu_hardware_fault: node:gpu007, job:73412" in html
    # the fix's exact command, shell-quoted, in both
    cmd = "scontrol update NodeName=gpu007 State=DRAIN &#x27;Reason=warden: GPU hardware fault (Xid 79)&#x27;"
    assert cmd in html
    assert "'Reason=warden: GPU hardware fault (Xid 79)'" in md


def test_timeline_is_in_time_order_and_spans_kernel_job_log_and_scheduler(xid79):
    d, facts, files = xid79
    entries, cut = build_timeline(d, facts)
    assert cut == 0
    assert [e.at for e in entries] == sorted(e.at for e in entries)
    assert {"kernel", "job log", "scheduler"} <= {e.lane for e in entries}
    xid = next(e for e in entries if e.where == "kernel/gpu007.log:27")
    assert xid.cited and xid.at == datetime(2026, 11, 29, 9, 21, 37, tzinfo=timezone.utc)
    ended = next(e for e in entries if e.text.startswith("job 73412 ended"))
    assert ended.at > xid.at  # the job died half an hour after the GPU fell off the bus
    rows = re.findall(r'<td class="when">([^<]+)</td>', files.html.read_text())
    assert rows == sorted(rows) and len(rows) == len(entries)


def test_heat_map_rows_are_the_nodes_with_dcgm_values(xid79):
    _, facts, files = xid79
    grid = gpu_grid(facts)
    assert grid.values["xid"][("gpu007", "4")] == 79
    assert files.nodes_total == len(grid.gpus) == files.nodes_drawn  # six nodes: all drawn
    assert "gpu007" in grid.gpus


def test_cluster_text_is_escaped_in_html_and_markdown(tmp_path):
    hostile = "<script>alert(1)</script> [x](http://evil) \x1b]8;;http://evil\x07 <img src=x onerror=alert(2)>"
    d = Diagnosis(question=f"why? {hostile}", root_cause="gpu_hardware_fault", culprits=["node:gpu007"],
                  evidence=[Evidence(text=hostile, file="kernel/gpu007.log", line=3,
                                     at=datetime(2026, 1, 1, tzinfo=timezone.utc))],
                  confidence=0.9, summary=hostile)
    files = write_report(d, None, tmp_path / "r")
    html = files.html.read_text()
    assert "<script" not in html and "<img src=x" not in html and "\x1b" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "\\x1b" in html
    md = files.markdown.read_text()
    assert "<script>" not in md and "[x](http" not in md and "\\<script\\>" in md
    assert any("not kept" in n for n in files.notes)  # no facts: the GPU section says why it is empty
    assert [p.name for p in files.images] == ["timeline.png"]


def _fleet(nodes: int, gpus: int = 8) -> GpuGrid:
    grid = GpuGrid()
    names = [f"gpu{n:05d}" for n in range(nodes)]
    grid.gpus = {n: [str(g) for g in range(gpus)] for n in names}
    grid.values = {
        "util": {(n, str(g)): 95.0 + (i + g) % 5 for i, n in enumerate(names) for g in range(gpus)},
        "temp": {(n, str(g)): 60.0 + (i * 3 + g) % 7 for i, n in enumerate(names) for g in range(gpus)},
        "xid": {(n, str(g)): 0.0 for n in names for g in range(gpus)},
    }
    grid.values["xid"][("gpu04242", "3")] = 79.0  # one GPU fell off the bus
    grid.values["temp"][("gpu00777", "1")] = 93.0  # one runs hot
    grid.values["util"][("gpu09000", "0")] = 3.0  # one idles
    return grid


def test_ten_thousand_nodes_aggregate_to_the_worst_few(tmp_path):
    grid = _fleet(10_000)
    assert grid.gpu_count == 80_000
    nodes = worst_nodes(grid, top=24, always=["gpu00042"])
    assert len(nodes) == 24
    assert nodes[:2] == ["gpu00042", "gpu04242"]  # the culprit first, then the fault
    assert {"gpu00777", "gpu09000"} <= set(nodes)  # the hot and the idle node stand out too
    p = draw_heatmap(grid, nodes, tmp_path / "h.png", title="fleet")
    w, h = _valid_png(p)
    assert h < 1200  # 24 rows, not 10,000


def test_worst_nodes_refuses_a_non_positive_top():
    with pytest.raises(ValueError):
        worst_nodes(_fleet(3), top=0)


def test_cli_reports_a_past_run_and_refuses_bad_input(tmp_path, monkeypatch):
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    r = runner.invoke(app, ["diagnose", str(INCIDENT / "snapshot"), "--json"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["report", "last", "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "out" / "report.html").is_file() and "gpu-heatmap.png" in r.output
    r = runner.invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "o2")])  # not a snapshot
    assert r.exit_code == 2 and r.output.startswith("error: ") and "Traceback" not in r.output
    r = runner.invoke(app, ["report", "feedface", "--out", str(tmp_path / "o3")])  # no such run
    assert r.exit_code == 2 and "no run" in r.output
