"""Honest evals (issue 13): a run the model did not answer is never scored as the model's — the
checks' or the built-in model's answer is reported beside the score, not in it."""

from __future__ import annotations

from pathlib import Path

from eval_helpers import diagnosis, write_incident
from evals.runner import run_eval
from tools.models.findings import Finding


def _partial(root_cause_of_checks: str):
    d = diagnosis("inconclusive")
    d.answered_by, d.stopped_by = "checks", "repeated_call: get_cluster_overview called 3 times"
    d.findings = [Finding(check="gpu_xid", root_cause=root_cause_of_checks, message="Xid 79", confidence=0.9)]
    return d


def test_a_model_that_answered_nothing_scores_zero_and_the_checks_are_reported_apart(tmp_path: Path):
    write_incident(tmp_path, "a", root_cause="gpu_hardware_fault")
    write_incident(tmp_path, "b", root_cause="inconclusive")
    report = run_eval([tmp_path], lambda inc: _partial("gpu_hardware_fault"), progress=False, model="looper")
    t = report.totals
    assert t.root_cause_accuracy == 0.0 and t.passed == 0, "the checks' answer is not the model's"
    assert t.answered_by_model == 0 and t.answered_by_checks == 2
    assert t.fallback_root_cause_accuracy == 0.5  # the checks were right on 'a' only
    assert t.stopped_by == {"repeated_call": 2}, "why the model did not answer is counted"
    a = next(c for c in report.cases if c.incident_id == "a")
    assert a.answered_by == "checks" and a.fallback_root_cause == "gpu_hardware_fault" and a.fallback_root_cause_ok
    b = next(c for c in report.cases if c.incident_id == "b")
    assert not b.root_cause_ok, "an evidence-less 'inconclusive' is not credited even where inconclusive is expected"


def test_a_builtin_fallback_is_not_credited_to_the_llm(tmp_path: Path):
    write_incident(tmp_path, "a", root_cause="gpu_hardware_fault")

    def fell_back(inc):
        d = diagnosis("gpu_hardware_fault")
        d.answered_by, d.providers = "builtin-fallback", ["builtin", "builtin"]
        return d

    report = run_eval([tmp_path], fell_back, progress=False, model="some-llm")
    c = report.cases[0]
    assert not c.root_cause_ok and not c.passed and c.answered_by == "builtin-fallback"
    assert c.providers == ["builtin", "builtin"] and report.totals.answered_by_builtin_fallback == 1
