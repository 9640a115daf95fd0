"""Report totals, group tables, report files, baseline comparison and the CI gate."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

import evals.compare
import evals.evaluators
import evals.report
import evals.results
import evals.runner
import evals.safety
import evals.store
import evals.totals
from evals.compare import compare_reports, gate
from evals.report import load_reports, report_paths, write_report
from evals.results import CaseResult, EvalReport
from evals.store import EvalStore
from evals.totals import finalize, summarize
from tools.errors import ConfigError


def case(inc: str, expected: str = "gpu_hardware_fault", got: str | None = "gpu_hardware_fault", *, run: int = 1,
         passed: bool | None = None, f1: float = 1.0, actions_ok: bool = True, tags: list[str] | None = None,
         forbidden: list[str] | None = None, error: str | None = None) -> CaseResult:
    ok = got == expected
    return CaseResult(incident_id=inc, expected_root_cause=expected, root_cause=got, run_index=run,
                      passed=ok and actions_ok and not forbidden if passed is None else passed,
                      root_cause_ok=ok, detection_ok=(expected == "healthy") == (got == "healthy"),
                      culprit_precision=f1, culprit_recall=f1, culprit_f1=f1, actions_ok=actions_ok,
                      forbidden_proposed=forbidden or [], tags=tags or [], error=error, model_requests=2,
                      tool_calls=4, input_tokens=1000, output_tokens=100, wall_time_s=0.5)


def report(cases: list[CaseResult], model: str = "warden-builtin") -> EvalReport:
    return finalize(EvalReport(model=model, started_at=datetime(2026, 11, 29, tzinfo=timezone.utc), wall_time_s=3.0,
                               cases=cases))


def test_modules_export_their_public_names():
    for mod in (evals.compare, evals.evaluators, evals.report, evals.results, evals.runner, evals.safety,
                evals.store, evals.totals):
        assert all(hasattr(mod, n) for n in mod.__all__), mod.__name__


def test_totals():
    t = summarize([
        case("a"), case("b", got="straggler_node", f1=0.5),
        case("c", "healthy", "healthy", tags=["control"]), case("d", "healthy", "metadata_wall"),
        case("e", forbidden=["cancel_job job=1"]), case("f", actions_ok=False),
    ])
    assert (t.cases, t.incidents, t.passed) == (6, 6, 2)
    assert t.root_cause_accuracy == pytest.approx(4 / 6)
    assert t.culprit_f1 == pytest.approx(5.5 / 6)
    assert t.action_accuracy == pytest.approx(5 / 6)
    assert t.detection_accuracy == pytest.approx(5 / 6)  # only the control called a fault is wrong
    assert t.healthy_controls == 2 and t.false_positive_rate == 0.5
    assert t.safety_violations == 1
    assert t.model_requests == 12 and t.tool_calls == 24 and t.total_tokens == 6600
    assert t.case_wall_time_s == pytest.approx(3.0)


def test_no_controls_gives_no_false_positive_rate_and_repeats_give_a_stdev():
    t = summarize([case("a", run=1), case("a", got="straggler_node", run=2)])
    assert t.false_positive_rate is None
    assert t.incidents == 1 and t.root_cause_accuracy == 0.5 and t.accuracy_stdev == 0.5


def test_groups_by_tag_and_root_cause():
    r = report([case("a", tags=["gpu", "nccl"]), case("b", got="straggler_node", tags=["gpu"]),
                case("c", "healthy", "healthy")])
    tags = {g.key: g for g in r.by_tag}
    assert set(tags) == {"gpu", "nccl", "(untagged)"}
    assert (tags["gpu"].cases, tags["gpu"].passed, tags["gpu"].root_cause_accuracy) == (2, 1, 0.5)
    causes = {g.key: g for g in r.by_root_cause}
    assert causes["gpu_hardware_fault"].cases == 2 and causes["healthy"].root_cause_accuracy == 1.0


def test_report_paths(tmp_path: Path):
    assert report_paths(tmp_path / "out") == (tmp_path / "out.json", tmp_path / "out.md")
    assert report_paths(tmp_path / "out.json") == (tmp_path / "out.json", tmp_path / "out.md")
    assert report_paths(tmp_path) == (tmp_path / "report.json", tmp_path / "report.md")


def test_write_and_load_round_trip(tmp_path: Path):
    r = report([case("a"), case("b", got="straggler_node", tags=["gpu"])])
    js, md = write_report(tmp_path / "sub" / "eval", [r])
    doc = json.loads(js.read_text())
    assert doc["format"] == "warden-eval/1" and doc["reports"][0]["totals"]["root_cause_accuracy"] == 0.5
    assert load_reports(js)[0].cases == r.cases
    text = md.read_text()
    assert "| root-cause accuracy | 50.0% |" in text
    assert "| b | 1 | gpu_hardware_fault | straggler_node | **no** |" in text
    assert "### By tag — warden-builtin" in text and "### By root cause — warden-builtin" in text


@pytest.mark.parametrize("content", ["not json", '{"reports": 3}', '{"format": "other/9", "reports": []}'])
def test_load_rejects_what_is_not_a_report(tmp_path: Path, content: str):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(ConfigError, match="bad.json"):
        load_reports(p)


def test_comparison_finds_case_metric_and_safety_regressions():
    old = report([case("a"), case("b"), case("c", "healthy", "healthy"), case("gone")])
    new = report([case("a"), case("b", got="straggler_node"), case("c", "healthy", "healthy", forbidden=["drain_node"]),
                  case("new-hard", got="healthy")])
    cmp = compare_reports(old, new)
    kinds = {(g.kind, g.subject) for g in cmp.regressions}
    assert ("case", "b") in kinds and ("case", "c") in kinds
    assert ("metric", "root_cause_accuracy") in kinds and ("safety", "safety_violations") in kinds
    assert ("case", "new-hard") not in kinds  # new incidents are not regressions
    assert cmp.added == ["new-hard"] and cmp.removed == ["gone"]
    assert cmp.deltas["root_cause_accuracy"] == pytest.approx(-1 / 3, abs=1e-6)
    assert any("regression (case) b" in r for r in gate([new], [cmp]))


def test_comparison_of_equal_reports_and_fixes():
    old = report([case("a"), case("b", got="straggler_node")])
    new = report([case("a"), case("b")])
    cmp = compare_reports(old, new)
    assert cmp.regressions == [] and cmp.fixed == ["b"]
    assert compare_reports(new, new).regressions == []


def test_repeated_runs_regress_when_any_run_fails():
    old = report([case("a", run=1), case("a", run=2)])
    new = report([case("a", run=1), case("a", got="straggler_node", run=2)])
    reg = [g for g in compare_reports(old, new).regressions if g.kind == "case"]
    assert reg and reg[0].before == "passed 2/2" and reg[0].after == "passed 1/2 (straggler_node)"


def test_gate_on_accuracy():
    r = report([case("a"), case("b", got="straggler_node")])
    assert gate([r], [], min_accuracy=0.5) == []
    assert gate([r], [], min_accuracy=0.9) == ["warden-builtin: root-cause accuracy 50.0% below 90.0%"]
    assert gate([report([])], []) == ["warden-builtin: no incidents were evaluated"]


def test_eval_store_records_runs_and_cases(tmp_path: Path):
    r = report([case("a"), case("b", got="straggler_node")])
    store = EvalStore(tmp_path / "evals.db")
    eval_id = store.save(r)
    assert r.eval_id == eval_id and store.runs()[0]["root_cause_accuracy"] == 0.5
    rows = list(store.db["eval_cases"].rows_where("eval_id = ?", [eval_id], order_by="incident_id"))
    assert [(x["incident_id"], x["passed"], x["root_cause"]) for x in rows] == [("a", 1, "gpu_hardware_fault"),
                                                                              ("b", 0, "straggler_node")]
    store.close()
