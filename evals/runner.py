"""The replay runner: every incident under some directories, through a diagnose function, scored.

``run_eval`` builds a pydantic_evals ``Dataset`` (one ``Case`` per incident: the Incident as inputs,
its ``Expected`` as expected output), runs the diagnose callable on each (in worker threads, up to
``max_concurrency`` at once, ``repeat`` times each) under the execution trip-wire, applies the
evaluators of ``evals.evaluators``, and turns the result into an ``EvalReport``.

The runner never imports the agent: the caller (the CLI, the composition root) passes

* ``diagnose(incident) -> Diagnosis`` — replay the incident's snapshot through the agent; it must be
  given no command runner or execution setup;
* ``inspect_run(diagnosis) -> RunRecord`` (optional) — what the run used and did, looked up by
  ``diagnosis.run_id`` in the audit log (tool calls, execution records) and the gateway's usage
  ledger (model requests, tokens, cost). Without it those metrics are 0.

A diagnose call that fails after its run started raises :class:`CaseFailed` naming the run and what
it used (the ledger's requests, tokens and the providers that answered): the case fails with
``answered_by="none"`` and its tokens still count. Any other exception fails the case with nothing
known of its usage.

Concurrency: the built-in model is CPU-light but replay, parsing and checks are Python, so threads
contend for the GIL. Measured on 2 cores (shared with other work, load ~4) over 27-29 bundled incidents,
three rounds, suite wall time: 1 thread 8.0-10.9 s, 2 threads 6.0-7.7 s, 3 threads 6.3-7.6 s, 4 threads
6.1-10.2 s. Two threads (the default) overlap one case's SQLite writes and gateway round-trips with
another's parsing; more only add contention. With an LLM behind the gateway the cases wait on the
network, and a higher ``max_concurrency`` pays off.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic_evals import Case, Dataset, increment_eval_metric
from pydantic_evals.reporting import ReportCase, ReportCaseFailure

from evals.evaluators import (ExplanationJudge, deterministic_evaluators, forbidden_proposed, healthy_proposed,
                              missing_actions)
from evals.incident import Incident, find_incidents, load_incident
from evals.results import PASS_ASSERTIONS, CaseResult, EvalOutput, EvalReport, RunRecord
from evals.safety import ExecutionAttempts, current_case, execution_tripwire
from evals.scoring import canonical_culprit
from evals.store import EvalStore
from evals.totals import finalize
from tools.errors import SnapshotError
from tools.models.findings import Diagnosis

__all__ = ["CaseFailed", "DiagnoseFn", "InspectFn", "DEFAULT_CONCURRENCY", "bundled_incidents_dir", "load_incidents", "run_eval"]

DiagnoseFn = Callable[[Incident], Diagnosis]
InspectFn = Callable[[Diagnosis], RunRecord]

DEFAULT_CONCURRENCY = 2
"""Worker threads for the built-in model on a 2-core machine (see the module docstring)."""

_RUN_INDEX = re.compile(r" \[(\d+)/\d+\]$")
_FAILED_RUN = re.compile(r" \[run ([0-9A-Za-z_-]+)\]$")


class CaseFailed(Exception):
    """Raised by a diagnose function whose run failed: the error, the run's id and what it used.

    Args:
        error: what the run raised (its type and message become the case's ``error``).
        run_id: the run's id (the gateway ledger's and the audit log's ``run_id``).
        run: what the run used before it failed (requests, tokens, providers that answered), from the ledger.
    """

    def __init__(self, error: BaseException, run_id: str, run: RunRecord | None = None) -> None:
        self.error = error
        self.run_id = run_id
        self.run = run or RunRecord()
        super().__init__(f"{type(error).__name__}: {error} [run {run_id}]")


def bundled_incidents_dir() -> Path:
    """The bundled incident set: ``incidents/`` beside this package (a checkout or an editable install),
    else ``evals/incidents`` under the current directory.

    Raises:
        SnapshotError: neither exists.
    """
    for d in (Path(__file__).resolve().parent / "incidents", Path.cwd() / "evals" / "incidents"):
        if d.is_dir():
            return d
    raise SnapshotError("the bundled incidents (evals/incidents) are not installed; give incident directories")


def load_incidents(incident_dirs: Sequence[Path], tags: Sequence[str] | None = None) -> list[Incident]:
    """Every incident under the directories (any depth), optionally only those with one of ``tags``.

    Raises:
        SnapshotError: a directory that does not exist or holds no incident, an invalid incident.yaml,
            or two different incident directories with the same id.
    """
    paths: dict[Path, None] = {}
    for d in incident_dirs:
        d = Path(d)
        if not d.is_dir():
            raise SnapshotError(f"{d}: no such incident directory")
        found = find_incidents(d)
        if not found:
            raise SnapshotError(f"{d}: no incident.yaml found under it")
        paths.update(dict.fromkeys(p.resolve() for p in found))
    incidents: dict[str, Incident] = {}
    for p in paths:
        inc = load_incident(p)
        if inc.id in incidents:
            raise SnapshotError(f"{p}: incident id {inc.id!r} is also used by {incidents[inc.id].path}")
        incidents[inc.id] = inc
    wanted = set(tags or [])
    return [i for i in incidents.values() if not wanted or wanted & set(i.tags)]


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def _failed_case(rc: ReportCaseFailure[Incident, EvalOutput, Any], base: dict[str, Any],
                 failed_runs: dict[str, RunRecord]) -> CaseResult:
    """A case whose diagnose call raised: nothing answered (``answered_by="none"``), and what its run
    used before failing is counted when the diagnose function said which run it was (CaseFailed)."""
    message = " ".join(rc.error_message.split())
    if message.startswith(f"{CaseFailed.__name__}: "):
        message = message[len(CaseFailed.__name__) + 2:]
    m = _FAILED_RUN.search(message)
    run_id = m.group(1) if m else None
    rec = failed_runs.get(run_id, RunRecord()) if run_id else RunRecord()
    if m:
        message = message[:m.start()]
    return CaseResult(**base, error=message[:500], answered_by="none", run_id=run_id,
                      model_requests=rec.model_requests, tool_calls=rec.tool_calls, input_tokens=rec.input_tokens,
                      output_tokens=rec.output_tokens, cost_usd=rec.cost_usd, providers=rec.providers,
                      executions=rec.executions)


def _case_result(rc: ReportCase[Incident, EvalOutput, Any] | ReportCaseFailure[Incident, EvalOutput, Any],
                 failed_runs: dict[str, RunRecord] | None = None) -> CaseResult:
    inc = rc.inputs
    m = _RUN_INDEX.search(rc.name)
    base = {"incident_id": inc.id, "title": inc.title, "kind": inc.kind, "tags": inc.tags,
            "run_index": int(m.group(1)) if m else 1, "expected_root_cause": inc.expected.root_cause}
    if isinstance(rc, ReportCaseFailure):
        return _failed_case(rc, base, failed_runs or {})
    out, d = rc.output, rc.output.diagnosis
    asserted = {k: v.value for k, v in rc.assertions.items()}
    scores = {k: v for k, v in rc.scores.items()}
    p = float(scores["culprit_precision"].value) if "culprit_precision" in scores else 0.0
    r = float(scores["culprit_recall"].value) if "culprit_recall" in scores else 0.0
    ap = float(scores["action_precision"].value) if "action_precision" in scores else 0.0
    ar = float(scores["action_recall"].value) if "action_recall" in scores else 0.0
    proposed = [a.spec for a in d.proposed_actions]
    got, want = {canonical_culprit(c) for c in d.culprits}, {canonical_culprit(c) for c in inc.expected.culprits}
    judge = scores.get("explanation")
    own = d.answered_by == "model"  # a stopped run or a fallback is never scored as the model's answer
    fallback = None if own else (d.root_cause if d.answered_by == "builtin-fallback"
                                 else (d.findings[0].root_cause if d.findings else "healthy"))
    failures = [f for f in rc.evaluator_failures if f.name != "explanation"]
    judge_failed = next((f.error_message for f in rc.evaluator_failures if f.name == "explanation"), None)
    return CaseResult(
        **base, root_cause=d.root_cause,
        passed=own and all(asserted.get(n) is True for n in PASS_ASSERTIONS) and r == 1.0,
        root_cause_ok=own and asserted.get("root_cause") is True, detection_ok=own and asserted.get("detection") is True,
        culprit_precision=p if own else 0.0, culprit_recall=r if own else 0.0, culprit_f1=_f1(p, r) if own else 0.0,
        missing_culprits=sorted(want - got), extra_culprits=sorted(got - want),
        actions_ok=own and asserted.get("actions") is True, missing_actions=missing_actions(inc.expected, proposed),
        action_precision=ap if own else 0.0, action_recall=ar if own else 0.0,
        proposed_actions=[f"{a.spec.type}" + (f" ({a.error})" if a.error else "") for a in d.proposed_actions],
        forbidden_proposed=forbidden_proposed(inc.expected, proposed),
        healthy_proposed=healthy_proposed(inc.expected, proposed), executions=out.executions,
        model_requests=out.run.model_requests, tool_calls=out.run.tool_calls, input_tokens=out.run.input_tokens,
        output_tokens=out.run.output_tokens, cost_usd=out.run.cost_usd, wall_time_s=rc.task_duration,
        judge_score=float(judge.value) if judge is not None else None,
        judge_reason=judge.reason if judge is not None else None,
        judge_error=judge_failed[:500] if judge_failed else None,
        stopped_by=d.stopped_by, run_id=d.run_id, diagnosis=d, answered_by=d.answered_by,
        providers=out.run.providers or d.providers, fallback_root_cause=fallback,
        fallback_root_cause_ok=fallback is not None and fallback == inc.expected.root_cause,
        error=("; ".join(f"{f.name}: {f.error_message}" for f in failures) or None),
    )


_USAGE = ("model_requests", "tool_calls", "input_tokens", "output_tokens", "cost_usd")


def _task(diagnose: DiagnoseFn, inspect_run: InspectFn | None, attempts: ExecutionAttempts,
          failed_runs: dict[str, RunRecord]) -> Callable[[Incident], EvalOutput]:
    def diagnose_incident(inc: Incident) -> EvalOutput:
        token = current_case.set(inc.id)
        try:
            d = diagnose(inc)
        except CaseFailed as e:  # the case fails; what its run used still counts
            failed_runs[e.run_id] = e.run.model_copy(update={"executions": [*e.run.executions,
                                                                            *attempts.for_case(inc.id)]})
            for name in _USAGE:
                increment_eval_metric(name, getattr(e.run, name))
            raise
        finally:
            current_case.reset(token)
        rec = inspect_run(d) if inspect_run is not None else RunRecord()
        for name in _USAGE:
            increment_eval_metric(name, getattr(rec, name))
        return EvalOutput(diagnosis=d, run=rec, executions=[*rec.executions, *attempts.for_case(inc.id)])

    return diagnose_incident


def run_eval(incident_dirs: Sequence[Path], diagnose: DiagnoseFn, *, repeat: int = 1,
             tags: Sequence[str] | None = None, max_concurrency: int = DEFAULT_CONCURRENCY, progress: bool = True,
             model: str = "builtin", inspect_run: InspectFn | None = None, judge: Any = None,
             store: Path | None = None) -> EvalReport:
    """Replay and score every incident under ``incident_dirs``.

    Args:
        incident_dirs: directories holding incidents (DESIGN.md format), searched at any depth.
        diagnose: the agent, as ``incident -> Diagnosis``; never given a way to execute.
        repeat: runs per incident (run-to-run variance of an LLM).
        tags: evaluate only incidents carrying one of these tags.
        max_concurrency: cases diagnosed at once, each in a worker thread.
        progress: show pydantic_evals' rich progress bar.
        model: the label of what is evaluated (a gateway alias), used in the report.
        inspect_run: looks up a run's usage and execution records (see the module docstring).
        judge: a pydantic-ai Model (or model name) for the optional LLM judge of the summary; None = off.
        store: SQLite file to record the run in (the CLI uses ``$WARDEN_HOME/evals.db``); None = not stored.

    Returns:
        EvalReport with one CaseResult per incident per run, totals and group tables. A diagnose call
        that raises becomes a failed case with ``error`` set and ``answered_by="none"``, never an
        exception here; raised as CaseFailed, the case keeps its run's id and usage.

    Raises:
        SnapshotError: the incidents cannot be loaded (see load_incidents).
        ValueError: ``repeat`` or ``max_concurrency`` below 1.
    """
    if repeat < 1 or max_concurrency < 1:
        raise ValueError(f"repeat and max_concurrency must be >= 1 (got {repeat}, {max_concurrency})")
    incidents = load_incidents(incident_dirs, tags)
    evaluators: list[Any] = deterministic_evaluators()
    if judge is not None:
        evaluators.append(ExplanationJudge(model=judge))
    dataset = Dataset[Incident, Any, Any](
        name="warden-incidents", evaluators=evaluators,
        cases=[Case(name=i.id, inputs=i, expected_output=i.expected, metadata={"tags": i.tags, "kind": i.kind})
               for i in incidents])
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    failed_runs: dict[str, RunRecord] = {}
    with execution_tripwire() as attempts:
        result = dataset.evaluate_sync(_task(diagnose, inspect_run, attempts, failed_runs), task_name=model,
                                       name=model, max_concurrency=max_concurrency, progress=progress, repeat=repeat)
    wall = time.perf_counter() - t0
    cases = [_case_result(c, failed_runs) for c in [*result.cases, *result.failures]]
    cases.sort(key=lambda c: (c.incident_id, c.run_index))
    report = finalize(EvalReport(model=model, repeat=repeat, started_at=started, wall_time_s=wall,
                                 max_concurrency=max_concurrency, incident_dirs=[str(d) for d in incident_dirs],
                                 tags=list(tags) if tags else None, cases=cases))
    attributed = {e for c in cases for e in c.executions}
    report.totals.executions_attempted += sum(e not in attributed for e in attempts)
    if store is not None:
        s = EvalStore(store)
        try:
            s.save(report)
        finally:
            s.close()
    return report
