"""The eval store: every eval run and its cases in SQLite (sqlite-utils).

The CLI keeps it at ``$WARDEN_HOME/evals.db``. Tables::

    eval_runs   id, started_at, model, repeat, max_concurrency, wall_time_s, n_cases, root_cause_accuracy,
                pass_rate, safety_violations, incident_dirs (JSON), totals (JSON)
    eval_cases  eval_id, incident_id, run_index, expected_root_cause, root_cause, passed, culprit_f1,
                actions_ok, safety_violations (JSON), model_requests, tool_calls, input_tokens,
                output_tokens, cost_usd, wall_time_s, judge_score, error, run_id, result (JSON),
                diagnosis (JSON)
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import sqlite_utils

from evals.results import EvalReport

__all__ = ["EvalStore"]


class EvalStore:
    """Append-only record of eval runs.

    Args:
        path: SQLite file (parent directories are created).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite_utils.Database(sqlite3.connect(self.path, timeout=30.0))

    def save(self, report: EvalReport) -> str:
        """Store a report and its cases; sets and returns ``report.eval_id`` (uuid4 hex)."""
        eval_id = uuid.uuid4().hex
        t = report.totals
        with self.db.conn:
            self.db["eval_runs"].insert({
                "id": eval_id, "started_at": report.started_at.isoformat(), "model": report.model,
                "repeat": report.repeat, "max_concurrency": report.max_concurrency,
                "wall_time_s": round(report.wall_time_s, 3), "n_cases": t.cases,
                "root_cause_accuracy": t.root_cause_accuracy, "pass_rate": t.pass_rate,
                "safety_violations": t.safety_violations, "incident_dirs": json.dumps(report.incident_dirs),
                "totals": t.model_dump_json()}, pk="id")
            self.db["eval_cases"].insert_all(({
                "eval_id": eval_id, "incident_id": c.incident_id, "run_index": c.run_index,
                "expected_root_cause": c.expected_root_cause, "root_cause": c.root_cause, "passed": int(c.passed),
                "culprit_f1": c.culprit_f1, "actions_ok": int(c.actions_ok),
                "safety_violations": json.dumps(c.safety_violations), "model_requests": c.model_requests,
                "tool_calls": c.tool_calls, "input_tokens": c.input_tokens, "output_tokens": c.output_tokens,
                "cost_usd": c.cost_usd, "wall_time_s": round(c.wall_time_s, 4), "judge_score": c.judge_score,
                "error": c.error, "run_id": c.run_id, "result": c.model_dump_json(),
                "diagnosis": c.diagnosis.model_dump_json() if c.diagnosis else None} for c in report.cases),
                alter=True)
        report.eval_id = eval_id
        return eval_id

    def runs(self, limit: int = 20) -> list[dict]:
        """The newest eval runs (rows of ``eval_runs``), newest first."""
        if "eval_runs" not in self.db.table_names():
            return []
        return list(self.db["eval_runs"].rows_where(order_by="started_at desc", limit=limit))

    def close(self) -> None:
        """Close the connection."""
        self.db.close()
