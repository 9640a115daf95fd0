"""Honest evals (issue 13): a run the model did not answer is never scored as the model's — the
checks' or the built-in model's answer is reported beside the score, not in it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from eval_helpers import BUNDLED, diagnosis, write_incident
from evals.report import render_markdown
from evals.results import RunRecord
from evals.runner import CaseFailed, run_eval
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


def test_a_failed_run_is_answered_by_none_and_its_usage_still_counts(tmp_path: Path):
    write_incident(tmp_path, "a", root_cause="gpu_hardware_fault")
    write_incident(tmp_path, "b", root_cause="gpu_hardware_fault")
    used = RunRecord(model_requests=2, input_tokens=3_000, output_tokens=40, providers=["llm"])

    def fails(inc):
        if inc.id == "a":  # the run started, asked the model twice, then failed
            raise CaseFailed(RuntimeError("the model stack broke"), "run-a", used)
        raise ValueError("failed before any run")

    report = run_eval([tmp_path], fails, progress=False, model="some-llm")
    a, b = sorted(report.cases, key=lambda c: c.incident_id)
    assert a.answered_by == "none" and a.error == "RuntimeError: the model stack broke" and a.run_id == "run-a"
    assert (a.model_requests, a.input_tokens, a.output_tokens, a.providers) == (2, 3_000, 40, ["llm"])
    assert b.answered_by == "none" and b.error == "ValueError: failed before any run" and b.input_tokens == 0
    t = report.totals
    assert (t.errors, t.answered_by_none, t.answered_by_model, t.model_answer_rate) == (2, 2, 0, 0.0)
    assert t.total_tokens == 3_040 and t.model_requests == 2, "a failed case's tokens are counted"
    md = render_markdown([report], [])
    assert "| answers from the model | 0 of 2 (0.0%) |" in md
    assert "| answered by model / checks / builtin-fallback / none (error) | 0 / 0 / 0 / 2 |" in md


def test_eval_cli_counts_the_ledger_of_a_run_that_failed(tmp_path: Path, home: Path):
    home.mkdir(parents=True, exist_ok=True)
    # an upstream answering 404 (a wrong base URL) fails each run after one request: the case is an
    # error answered by nobody, and its request, provider and ledger row are still on the case
    from typer.testing import CliRunner

    from agent.cli.app import app
    from gateway.testing import serve_in_thread
    from tests.emulators.openai_upstream import Raw

    shutil.copytree(BUNDLED / "xid79-nccl-watchdog-other-rank", tmp_path / "inc" / "xid79")
    with serve_in_thread(Raw(b'{"error": {"message": "no such route"}}', status=404)) as url:
        (home / "gateway.toml").write_text(f'[[providers]]\nname = "llm"\nkind = "openai_compat"\n'
                                           f'openai_base_url = "{url}"\n[routes]\nllm = ["llm"]\n')
        r = CliRunner().invoke(app, ["eval", "--no-progress", str(tmp_path / "inc"), "--model", "llm",
                                     "--report", str(tmp_path / "rep")], env={"COLUMNS": "200"})
    assert "Traceback" not in r.output and r.exit_code == 1, r.output  # the gate fails on the error
    llm = next(rep for rep in json.loads((tmp_path / "rep.json").read_text())["reports"] if rep["model"] == "llm")
    case = llm["cases"][0]
    assert case["answered_by"] == "none" and case["error"] and "404" in case["error"]
    assert case["model_requests"] == 1 and case["run_id"], "the failed request is found in the ledger by run id"
    assert llm["totals"]["answered_by_none"] == 1 and llm["totals"]["answered_by_model"] == 0


def test_a_partial_run_on_a_healthy_control_is_no_false_positive(tmp_path: Path):
    # the run stopped: 'inconclusive' is not the model's claim of a fault, nor of health
    write_incident(tmp_path, "quiet", root_cause="healthy")
    write_incident(tmp_path, "calm", root_cause="healthy")
    answers = {"quiet": _partial("gpu_hardware_fault"), "calm": diagnosis("gpu_hardware_fault")}
    report = run_eval([tmp_path], lambda inc: answers[inc.id], progress=False, model="some-llm")
    t = report.totals
    assert (t.healthy_controls, t.healthy_controls_answered, t.false_positive_rate) == (2, 1, 1.0)
    assert "| false-positive rate (healthy controls) | 100.0% of 2 (1 answered by the model) |" in \
        render_markdown([report], [])
    only_partial = run_eval([tmp_path], lambda inc: _partial("healthy"), progress=False, model="looper").totals
    assert only_partial.false_positive_rate is None and only_partial.healthy_controls_answered == 0
