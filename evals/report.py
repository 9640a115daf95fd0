"""Eval report: totals, per-tag and per-root-cause tables, JSON and Markdown files.

A report file is JSON (``ReportFile``): one ``EvalReport`` per model evaluated, plus the comparisons
with a baseline when one was given. ``write_report(path, ...)`` writes ``<path>.json`` and
``<path>.md`` (or ``report.json`` and ``report.md`` inside ``path`` when it is a directory).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from evals.compare import Comparison
from evals.results import EvalReport, Totals
from evals.totals import finalize, group_rows, summarize
from tools.errors import ConfigError

__all__ = ["REPORT_FORMAT", "TOTAL_ROWS", "ReportFile", "summarize", "group_rows", "finalize", "report_paths", "write_report",
           "load_reports", "render_markdown"]

REPORT_FORMAT = "warden-eval/1"


class ReportFile(BaseModel):
    """What ``--report`` writes and ``--baseline`` reads."""

    format: str = REPORT_FORMAT
    reports: list[EvalReport]
    comparisons: list[Comparison] = Field(default_factory=list)


def report_paths(path: Path) -> tuple[Path, Path]:
    """(json, markdown) paths for ``--report PATH``: inside PATH if it is a directory, else PATH.json/.md."""
    path = Path(path)
    if path.is_dir() or str(path).endswith(("/", "\\")):
        return path / "report.json", path / "report.md"
    base = path.with_suffix("") if path.suffix in (".json", ".md") else path
    return base.with_name(base.name + ".json"), base.with_name(base.name + ".md")


def write_report(path: Path, reports: list[EvalReport], comparisons: list[Comparison] | None = None) -> tuple[Path, Path]:
    """Write the JSON and Markdown reports; returns their paths (parent directories are created)."""
    js, md = report_paths(path)
    js.parent.mkdir(parents=True, exist_ok=True)
    doc = ReportFile(reports=reports, comparisons=comparisons or [])
    js.write_text(doc.model_dump_json(indent=2), encoding="utf-8")
    md.write_text(render_markdown(reports, comparisons or []), encoding="utf-8")
    return js, md


def load_reports(path: Path) -> list[EvalReport]:
    """Read a JSON report written by ``write_report`` (e.g. a ``--baseline``).

    Raises:
        ConfigError: naming the file when it is unreadable or not a Warden eval report.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read eval report: {e}") from None
    try:
        doc = ReportFile.model_validate_json(text)
    except ValidationError as e:
        err = e.errors()[0]
        raise ConfigError(f"{path}: not a Warden eval report: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    if doc.format != REPORT_FORMAT:
        raise ConfigError(f"{path}: report format {doc.format!r}, expected {REPORT_FORMAT!r}")
    return doc.reports


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _judge(t: Totals) -> str:
    mean = "off" if t.judge_mean is None else f"{t.judge_mean:.2f}"
    if t.judge_errors:
        mean = ("" if t.judge_mean is None else mean + ", ") + f"{t.judge_errors} judge error(s)"
    return mean


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    esc = [[cell.replace("|", "\\|") for cell in row] for row in rows]
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *("| " + " | ".join(r) + " |" for r in esc), ""]


TOTAL_ROWS: list[tuple[str, Callable[[Totals], str]]] = [  # (label, formatter): the totals table, in order
    ("incidents", lambda t: str(t.incidents)),
    ("cases (incident x run)", lambda t: str(t.cases)),
    ("passed", lambda t: f"{t.passed} ({_pct(t.pass_rate)})"),
    ("root-cause accuracy", lambda t: _pct(t.root_cause_accuracy)),
    ("accuracy stdev over repeats", lambda t: _pct(t.accuracy_stdev)),
    ("culprit precision / recall / F1", lambda t: f"{t.culprit_precision:.3f} / {t.culprit_recall:.3f} / {t.culprit_f1:.3f}"),
    ("action accuracy", lambda t: _pct(t.action_accuracy)),
    ("action precision / recall", lambda t: f"{t.action_precision:.3f} / {t.action_recall:.3f}"),
    ("detection accuracy", lambda t: _pct(t.detection_accuracy)),
    ("safety violations", lambda t: str(t.safety_violations)),
    ("executions attempted", lambda t: str(t.executions_attempted)),
    ("false-positive rate (healthy controls)", lambda t: f"{_pct(t.false_positive_rate)} of {t.healthy_controls}"
     + (f" ({t.healthy_controls_answered} answered by the model)"
        if t.healthy_controls_answered != t.healthy_controls else "")),
    ("errors", lambda t: str(t.errors)),
    ("answers from the model", lambda t: f"{t.answered_by_model} of {t.cases} ({_pct(t.model_answer_rate)})"),
    ("answered by model / checks / builtin-fallback / none (error)",
     lambda t: f"{t.answered_by_model} / {t.answered_by_checks} / {t.answered_by_builtin_fallback} / "
               f"{t.answered_by_none}"),
    ("root-cause accuracy of the fallbacks (not the model's)", lambda t: _pct(t.fallback_root_cause_accuracy)),
    ("partial runs by stop reason", lambda t: ", ".join(f"{k} {v}" for k, v in t.stopped_by.items()) or "none"),
    ("model requests / tool calls", lambda t: f"{t.model_requests} / {t.tool_calls}"),
    ("tokens / cost", lambda t: f"{t.total_tokens} / ${t.cost_usd:.4f}"),
    ("explanation (LLM judge, mean)", lambda t: _judge(t)),
]


def render_markdown(reports: list[EvalReport], comparisons: list[Comparison]) -> str:
    """The Markdown report: totals per model, regressions, per-case, per-tag and per-root-cause tables."""
    out = ["# Warden eval report", ""]
    out += _table(["metric", *(r.model for r in reports)],
                  [[name, *(fn(r.totals) for r in reports)] for name, fn in TOTAL_ROWS]
                  + [["suite wall time", *(f"{r.wall_time_s:.1f} s" for r in reports)]])
    for cmp in comparisons:
        out += [f"## Against baseline ({cmp.model})", ""]
        if cmp.regressions:
            out += _table(["kind", "subject", "before", "after"],
                          [[g.kind, g.subject, g.before, g.after] for g in cmp.regressions])
        else:
            out += ["No regressions.", ""]
        for label, items in (("Fixed", cmp.fixed), ("New incidents", cmp.added), ("Removed incidents", cmp.removed)):
            if items:
                out += [f"{label}: " + ", ".join(items), ""]
    for r in reports:
        out += [f"## Cases — {r.model}", ""]
        out += _table(["incident", "run", "expected", "got", "pass", "culprit F1", "actions", "safety", "req", "tools",
                       "s"],
                      [[c.incident_id, str(c.run_index), c.expected_root_cause, c.root_cause or f"error: {c.error}",
                        "yes" if c.passed else "**no**", f"{c.culprit_f1:.2f}",
                        "ok" if c.actions_ok else "missing: " + "; ".join(c.missing_actions),
                        "; ".join(c.safety_violations) or "ok", str(c.model_requests), str(c.tool_calls),
                        f"{c.wall_time_s:.2f}"] for c in r.cases])
        for title, rows in (("By tag", r.by_tag), ("By root cause", r.by_root_cause)):
            out += [f"### {title} — {r.model}", ""]
            out += _table(["key", "cases", "passed", "root-cause acc.", "culprit F1", "action acc.", "safety"],
                          [[g.key, str(g.cases), str(g.passed), _pct(g.root_cause_accuracy), f"{g.culprit_f1:.2f}",
                            _pct(g.action_accuracy), str(g.safety_violations)] for g in rows])
    return "\n".join(out)
