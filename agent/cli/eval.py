"""`warden eval [DIR ...]`: replay recorded incidents through the agent, score them, gate CI on the result.

This command is the composition root of the eval suite: evals/ never imports the agent, so it is given
here ``diagnose`` over each incident's snapshot (the agent on replay, with no way to execute) and a run
inspector that reads each run's usage and execution records:

* tool calls and any execution/verification records: the audit log (``$WARDEN_HOME/audit.db``), by run id;
* model requests, tokens and cost: the gateway's usage ledger (``$WARDEN_HOME/gateway.db``), by run id
  (zero when ``WARDEN_GATEWAY_URL`` points at a remote gateway, whose ledger is elsewhere).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Annotated, Any

import sqlite_utils
import typer
from rich.console import Console
from rich.text import Text

from agent.audit import AuditLog
from agent.cli.errors import warden_errors
from agent.cli.gateway_option import GatewayConfigOption
from agent.cli.tables import Column, print_table
from agent.diagnose import DEFAULT_QUESTION, diagnose as diagnose_context
from agent.gateway_setup import check_alias, load_gateway_config, route_parallelism
from agent.limits import LoopLimits
from agent.settings import WardenSettings
from agent.store import warden_home
from evals.compare import Comparison, compare_reports, gate
from evals.incident import Incident
from evals.report import TOTAL_ROWS, load_reports, write_report
from evals.results import EvalReport, RunRecord
from evals.runner import DEFAULT_CONCURRENCY, CaseFailed, bundled_incidents_dir, run_eval
from gateway.app import create_app
from gateway.client import make_model
from gateway.config import BUILTIN_MODEL, GatewayConfig
from gateway.errors import GatewayError
from gateway.store import open_db
from tools.models.findings import Diagnosis
from tools.read.context import ReadContext

__all__ = ["eval_cmd", "RunInspector", "EXIT_GATE_FAILED"]

EXIT_GATE_FAILED = 1
_EXECUTION_KINDS = ("execution", "verification")


class RunInspector:
    """``diagnosis -> RunRecord`` from the audit log and the gateway ledger (safe across threads)."""

    def __init__(self, audit: AuditLog, gateway_db: Path) -> None:
        self.audit = audit
        self.gateway_db = gateway_db
        self.since_seq = audit.head()[0]
        """Only audit rows written after the eval started are read."""

    def __call__(self, d: Diagnosis) -> RunRecord:
        return self.for_run(d.run_id) if d.run_id else RunRecord()

    def for_run(self, run_id: str) -> RunRecord:
        """What the run ``run_id`` used and did (also for a run that failed: its tokens count)."""
        tool_calls, executions = 0, []
        for rec in self.audit.records(run_id=run_id, since_seq=self.since_seq):
            if rec.kind == "tool_call":
                tool_calls += 1
            elif rec.kind in _EXECUTION_KINDS:
                executions.append(f"audit {rec.kind} seq {rec.seq}")
        db = sqlite_utils.Database(self.gateway_db)
        try:
            n, tin, tout, cost = db.execute(
                "select count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), "
                "coalesce(sum(cost_usd), 0) from ledger where run_id = ?", [run_id]).fetchone()
            providers = [row[0] for row in db.execute(
                "select provider from ledger where run_id = ? and provider is not null and status < 400 order by ts", [run_id])]
        finally:
            db.close()
        return RunRecord(model_requests=n, tool_calls=tool_calls, input_tokens=tin, output_tokens=tout,
                         cost_usd=cost, executions=executions, providers=providers)


def _split_tags(tags: list[str] | None) -> list[str] | None:
    out = [t.strip() for item in tags or [] for t in item.split(",") if t.strip()]
    return out or None


def _run_one(dirs: list[Path], alias: str, *, repeat: int, tags: list[str] | None, config: GatewayConfig,
             audit: AuditLog, limits: LoopLimits, judge: str | None, concurrency: int, progress: bool) -> EvalReport:
    home = warden_home()
    inspector = RunInspector(audit, home / "gateway.db")

    def diagnose(inc: Incident) -> Diagnosis:
        assert inc.path is not None
        run_id = uuid.uuid4().hex  # named before it starts: a run that fails is still found in the ledger
        try:  # diagnose_path's incident branch, on the Incident load_incidents already read
            ctx = ReadContext.from_snapshot(inc.snapshot)
            return diagnose_context(ctx, inc.question or DEFAULT_QUESTION, target=str(inc.path), model=alias,
                                    gateway_config=config, audit=audit, limits=limits, run_id=run_id)
        except Exception as e:  # the case fails (never the eval); its tokens and providers still count
            raise CaseFailed(e, run_id, inspector.for_run(run_id)) from e

    judge_app: Any = None
    judge_model = None
    if judge:
        judge_app = create_app(config, store_path=home / "gateway.db")
        judge_model = make_model(judge, judge_app)
    try:
        return run_eval(dirs, diagnose, repeat=repeat, tags=tags, max_concurrency=concurrency, progress=progress,
                        model=alias, inspect_run=inspector, judge=judge_model,
                        store=home / "evals.db")
    finally:
        if judge_app is not None:
            asyncio.run(judge_app.aclose())


def _print_cases(console: Console, reports: list[EvalReport]) -> None:
    multi = len(reports) > 1
    cols = [Column("incident", 24, 9)]
    for r in reports:
        cols += [Column(f"{r.model}: got" if multi else "root cause", 22, 8),
                 Column("pass", 4, 9, wrap=False)]
    cols.append(Column("safety", 6, 7))
    rows, styles = [], []
    for inc in sorted({c.incident_id for r in reports for c in r.cases}):
        runs_by = [[c for c in r.cases if c.incident_id == inc] for r in reports]
        expected = next(runs[0].expected_root_cause for runs in runs_by if runs)
        row = [inc]
        safety: list[str] = []
        failed = False
        for runs in runs_by:
            if not runs:
                row += ["", ""]
                continue
            ok = sum(c.passed for c in runs)
            failed |= ok != len(runs)
            got = ", ".join(sorted({c.root_cause or "error" for c in runs}))
            row += [got + ("" if all(c.root_cause_ok for c in runs) else f" (expected {expected})"),
                    ("ok" if ok == len(runs) else "FAIL") + (f" {ok}/{len(runs)}" if len(runs) > 1 else "")]
            safety += [v for c in runs for v in c.safety_violations]
        row.append("; ".join(sorted(set(safety))) or "ok")
        rows.append(row)
        styles.append("bold red" if safety else ("red" if failed else None))
    print_table(console, "Incidents", cols, rows, styles=styles, note="every field: --report PATH (JSON)")


def _print_totals(console: Console, reports: list[EvalReport]) -> None:
    cols = [Column("metric", 20, 9)] + [
        Column(r.model + (f" (x{r.repeat})" if r.repeat > 1 else ""), 10, 8, justify="right") for r in reports]
    rows = [[name, *(fn(r.totals) for r in reports)] for name, fn in TOTAL_ROWS]
    rows.append(["suite wall time", *(f"{r.wall_time_s:.1f} s" for r in reports)])
    print_table(console, "Totals", cols, rows)


def _print_comparisons(console: Console, comparisons: list[Comparison]) -> None:
    for cmp in comparisons:
        if not cmp.regressions:
            console.print(Text(f"{cmp.model}: no regressions against the baseline"
                               + (f" (fixed: {', '.join(cmp.fixed)})" if cmp.fixed else ""), style="green"))
            continue
        print_table(console, f"Regressions against the baseline — {cmp.model}",
                    [Column("kind", 8, 8), Column("subject", 20, 9), Column("before", 10, 6), Column("after", 10, 7)],
                    [[g.kind, g.subject, g.before, g.after] for g in cmp.regressions],
                    styles=["red"] * len(cmp.regressions))


def eval_cmd(
    dirs: Annotated[list[Path] | None, typer.Argument(help="Incident directories (searched at any depth); default: the bundled set.")] = None,
    model: Annotated[str, typer.Option("--model", help="Gateway alias to evaluate; a non-built-in alias is shown beside the built-in model.")] = BUILTIN_MODEL,
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="Runs per incident for --model (run-to-run variance).")] = 1,
    tags: Annotated[list[str] | None, typer.Option("--tags", help="Only incidents with one of these tags (comma-separated or repeated).")] = None,
    min_accuracy: Annotated[float, typer.Option("--min-accuracy", min=0.0, max=1.0, help="Fail (exit 1) when root-cause accuracy is below this.")] = 0.0,
    report: Annotated[Path | None, typer.Option("--report", help="Write PATH.json and PATH.md (or report.json/.md inside a directory).")] = None,
    baseline: Annotated[Path | None, typer.Option("--baseline", help="An earlier --report JSON; regressions fail (exit 1).")] = None,
    gateway_config: GatewayConfigOption = None,
    judge: Annotated[str | None, typer.Option("--judge", help="Gateway alias of an LLM judge that scores only the written summary (off by default).")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", "-j", min=1, help="Incidents diagnosed at once.")] = DEFAULT_CONCURRENCY,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
) -> None:
    """Replay recorded incidents through the agent and score every diagnosis: root cause, culprits,
    actions, forbidden actions, healthy controls, detection. Nothing is executed. Results go to
    $WARDEN_HOME/evals.db. Exit 1 below --min-accuracy, on any safety violation, error or regression.

    Example: warden eval --min-accuracy 0.9 --report build/eval --baseline main-eval.json
    """
    console = Console() if Console().is_terminal else Console(width=160)  # logs and CI: no squeezed columns
    with warden_errors(extra=(GatewayError,)):
        config = load_gateway_config(gateway_config)
        models = [BUILTIN_MODEL] + ([model] if model != BUILTIN_MODEL else [])
        for alias in models + ([judge] if judge else []):
            check_alias(alias, config)
        incident_dirs = list(dirs) if dirs else [bundled_incidents_dir()]
        base = load_reports(baseline) if baseline else []
        home = warden_home()
        home.mkdir(parents=True, exist_ok=True)
        open_db(home / "gateway.db").close()  # create the ledger once, before parallel runs open it
        settings = WardenSettings.load()
        audit = settings.open_audit()
        limits = settings.limits  # once, not per case: a bad value is one line naming it (exit 2)
        reports = [_run_one(incident_dirs, alias, repeat=repeat if alias == model else 1, tags=_split_tags(tags),
                            config=config, audit=audit, limits=limits, judge=judge,
                            concurrency=route_parallelism(config, alias, concurrency), progress=progress)
                   for alias in models]
        comparisons = [compare_reports(old, new) for new in reports for old in base if old.model == new.model]
        _print_cases(console, reports)
        _print_totals(console, reports)
        _print_comparisons(console, comparisons)
        if report is not None:
            js, md = write_report(report, reports, comparisons)
            console.print(f"report: {js} {md}")
    reasons = gate(reports, comparisons, min_accuracy=min_accuracy)
    for why in reasons:
        console.print(Text(f"FAIL {why}", style="bold red"))
    if reasons:
        raise typer.Exit(EXIT_GATE_FAILED)
    accuracy = (f"root-cause accuracy at least {min_accuracy:.0%}" if min_accuracy > 0
                else "root-cause accuracy not gated (--min-accuracy)")
    console.print(Text(f"PASS: no safety violation, execution, error or regression; {accuracy}", style="bold green"))
