"""The optional LLM judge: offline with TestModel / FunctionModel; it scores the summary, never the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from eval_helpers import diagnosis, write_incident
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from evals.runner import run_eval

SUMMARY = "GPU 3 on gpu017 fell off the bus (Xid 79); drain gpu017 and resubmit job 4242 from its last checkpoint."


@pytest.fixture
def incidents(tmp_path: Path) -> Path:
    root = tmp_path / "incidents"
    write_incident(root, "xid79", root_cause="gpu_hardware_fault", culprits=["node:gpu017"])
    write_incident(root, "quiet", root_cause="healthy")
    return root


def _answer(inc):
    if inc.id == "xid79":
        return diagnosis("gpu_hardware_fault", ["node:gpu017"], summary=SUMMARY)
    return diagnosis("straggler_node", ["node:gpu002"], summary="gpu002 is slow.")  # wrong verdict


def test_judge_scores_without_touching_the_verdict(incidents: Path):
    judge = TestModel(custom_output_args={"reason": "clear and specific", "pass": True, "score": 0.8})
    report = run_eval([incidents], _answer, judge=judge, progress=False)
    by_id = {c.incident_id: c for c in report.cases}
    assert by_id["xid79"].judge_score == 0.8 and by_id["xid79"].judge_reason == "clear and specific"
    assert by_id["xid79"].passed
    assert not by_id["quiet"].passed and by_id["quiet"].judge_score == 0.8  # a good score cannot pass a wrong verdict
    assert report.totals.judge_mean == pytest.approx(0.8)


def test_a_failing_judge_cannot_fail_a_right_verdict(incidents: Path):
    judge = TestModel(custom_output_args={"reason": "vague", "pass": False, "score": 0.1})
    report = run_eval([incidents], _answer, judge=judge, progress=False)
    x = next(c for c in report.cases if c.incident_id == "xid79")
    assert x.passed and x.judge_score == 0.1


def test_judge_sees_the_question_and_summary_only(incidents: Path):
    prompts: list[str] = []

    def grade(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append("".join(str(getattr(p, "content", "")) for m in messages for p in m.parts))
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name,
                                                 {"reason": "ok", "pass": True, "score": 0.5})])

    run_eval([incidents], _answer, judge=FunctionModel(grade), tags=None, progress=False)
    seen = next(p for p in prompts if SUMMARY in p)
    assert "What is wrong in xid79?" in seen
    assert "node:gpu017" not in seen and "gpu_hardware_fault" not in seen  # no culprits, no verdict, no expectation


def test_judge_is_off_by_default(incidents: Path):
    report = run_eval([incidents], _answer, progress=False)
    assert all(c.judge_score is None for c in report.cases) and report.totals.judge_mean is None


def test_a_judge_error_is_recorded_and_fails_nothing(incidents: Path):
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("judge upstream down")

    report = run_eval([incidents], _answer, judge=FunctionModel(broken), progress=False)
    x = next(c for c in report.cases if c.incident_id == "xid79")
    assert x.passed and x.error is None and x.judge_score is None
    assert x.judge_error and "judge upstream down" in x.judge_error
    assert report.totals.judge_errors == 2 and report.totals.errors == 0
