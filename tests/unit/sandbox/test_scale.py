"""The synthetic large-cluster generator: real formats, a complete manifest, seeded, and each injected
fault diagnosed as the generator expects by the real pipeline (snapshot source, parsers, checks,
built-in model)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from agent.diagnose import diagnose_path
from evals.incident import load_incident
from evals.scoring import score_case
from sandbox.scale import FAULT_KINDS, ScaleSpec, generate
from tools.parsers.gpu.dcgm_prometheus_text import DCGM_CHECKED_FIELDS, parse_dcgm_prometheus_text
from tools.read.context import ReadContext
from tools.snapshot.manifest import load_manifest

SMALL = dict(nodes=40, jobs=300)


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.mark.parametrize("fault", FAULT_KINDS)
def test_each_fault_is_diagnosed_as_expected(fault: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    gen = generate(ScaleSpec(fault=fault, **SMALL), tmp_path)
    inc = load_incident(gen.path)
    assert inc.expected.root_cause == gen.expected["root_cause"]
    d = diagnose_path(gen.path, audit=False)
    score = score_case(inc.expected, d)
    assert score.passed, (d.root_cause, d.culprits, score)


def test_json_variant_parses_and_is_diagnosed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    gen = generate(ScaleSpec(fault="thermal", variant="json", **SMALL), tmp_path)
    formats = {e.format for e in load_manifest(gen.snapshot).files}
    assert {"squeue-json", "sinfo-json", "sacct-json"} <= formats and "squeue-text" not in formats
    d = diagnose_path(gen.path, audit=False)
    assert score_case(load_incident(gen.path).expected, d).passed, d


def test_snapshot_is_complete_and_holds_every_kind_of_evidence(tmp_path: Path) -> None:
    gen = generate(ScaleSpec(fault="none", **SMALL), tmp_path)
    manifest = load_manifest(gen.snapshot)  # raises on a file not listed or listed but absent
    by_format: dict[str, int] = {}
    for e in manifest.files:
        by_format[e.format] = by_format.get(e.format, 0) + 1
    assert by_format["dcgm-prometheus-text"] == SMALL["nodes"] and by_format["kernel-log"] == SMALL["nodes"]
    for fmt in ("squeue-text", "sinfo-text", "sinfo-reasons-text", "scontrol-node-text", "scontrol-job-text",
                "sacct-text", "lctl-md-stats", "lctl-job-stats", "lfs-df", "lfs-df-inodes", "job-log"):
        assert by_format.get(fmt), fmt
    facts = ReadContext.from_snapshot(gen.snapshot).facts
    assert len(facts.nodes) == SMALL["nodes"]
    page = next(gen.snapshot.glob("gpu/*.prom")).read_text()
    families = {s.name for s in parse_dcgm_prometheus_text(page, path="p", families=None)}
    assert len(families) == 27  # a full dcgm-exporter page; the checks read only some of its families
    read = families & set(DCGM_CHECKED_FIELDS)
    assert 8 <= len(read) < 27 and len(facts.gpu_samples) == SMALL["nodes"] * 8 * len(read)
    assert any(n.drained and n.reason for n in facts.nodes)  # noise: an admin's drain
    pending = {j.reason for j in facts.jobs if j.state == "PENDING"}
    assert pending & {"Priority", "Resources"}


def test_same_spec_same_bytes_and_cache(tmp_path: Path) -> None:
    spec = ScaleSpec(fault="xid79", **SMALL)
    a = generate(spec, tmp_path / "a")
    b = generate(spec, tmp_path / "b")
    assert not a.cached and _digest(a.snapshot) == _digest(b.snapshot)
    again = generate(spec, tmp_path / "a")
    assert again.cached and again.expected == a.expected
    other = generate(ScaleSpec(fault="xid79", seed=2, **SMALL), tmp_path / "a")
    assert _digest(other.snapshot) != _digest(a.snapshot)


def test_bad_specs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        generate(ScaleSpec(fault="meteor"), tmp_path)
    with pytest.raises(ValueError, match="at least 8 nodes"):
        generate(ScaleSpec(nodes=4), tmp_path)
