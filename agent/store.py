"""Warden's run store: runs, tool calls, findings and proposed actions in SQLite (sqlite-utils).

Default location: ``$WARDEN_HOME/warden.db``, else the user's state directory
(``~/.local/state/warden/warden.db`` on Linux).
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlite_utils
from platformdirs import user_state_dir
from pydantic import BaseModel

from tools.models.findings import Diagnosis

__all__ = ["warden_home", "default_db_path", "RunStore", "RunSummary", "list_runs", "find_run"]


def warden_home() -> Path:
    """``$WARDEN_HOME`` if set, else the platform's user state directory for warden.

    Raises:
        ConfigError: ``$WARDEN_HOME`` cannot hold Warden's files: it (or a parent) is not a
            directory, or it cannot be created or written (the message names it and why).
    """
    env = os.environ.get("WARDEN_HOME")
    if not env:
        return Path(user_state_dir("warden"))
    problem = _home_problem(env)
    if problem:
        from tools.errors import ConfigError

        raise ConfigError(f"WARDEN_HOME={env}: {problem}")
    return Path(env)


@functools.lru_cache(maxsize=8)
def _home_problem(env: str) -> str | None:
    """Why ``env`` cannot be Warden's home, or None. Made when missing (every command that writes
    would make it anyway); checked once per value."""
    if "\0" in env:
        return "contains a NUL byte"
    p = Path(env)
    if p.exists() and not p.is_dir():
        return f"{p} is not a directory"
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"cannot be created: {e.strerror or type(e).__name__}" + (f" ({e.filename})" if e.filename else "")
    if not os.access(p, os.W_OK | os.X_OK):
        return "is not writable by this user"
    return None


def default_db_path() -> Path:
    """Where the run store lives by default."""
    return warden_home() / "warden.db"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class RunStore:
    """Append-only record of diagnosis runs.

    Tables: ``runs`` (id, started_at, finished_at, target, question, model, status, root_cause,
    confidence, gpu_hours_lost, diagnosis JSON), ``tool_calls`` (run_id, seq, name, args, result_chars,
    duration_ms, error), ``findings`` and ``proposed_actions`` (plan hash and argv lists as JSON).
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else default_db_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Sync tools run in pydantic-ai's worker threads: one connection, shared under a lock.
        self._lock = threading.Lock()
        self.db = sqlite_utils.Database(sqlite3.connect(self.path, check_same_thread=False))
        self._seq: dict[str, int] = {}

    def start_run(self, *, target: str, question: str, model: str) -> str:
        """Create a run row; returns its id (uuid4 hex)."""
        run_id = uuid.uuid4().hex
        self.db["runs"].insert({"id": run_id, "started_at": _now(), "finished_at": None, "target": target,
                                "question": question, "model": model, "status": "running", "root_cause": None,
                                "confidence": None, "gpu_hours_lost": None, "diagnosis": None}, pk="id")
        return run_id

    def tool_call(self, run_id: str, name: str, args: dict[str, Any], *, result_chars: int, duration_ms: float,
                  error: str | None = None) -> None:
        """Record one tool call (arguments as JSON, result size only)."""
        with self._lock:
            seq = self._seq.get(run_id, 0) + 1
            self._seq[run_id] = seq
            self.db["tool_calls"].insert({"run_id": run_id, "seq": seq, "name": name,
                                          "args": json.dumps(args, default=str),
                                          "result_chars": result_chars, "duration_ms": round(duration_ms, 2),
                                          "error": error, "at": _now()})

    def finish_run(self, run_id: str, diagnosis: Diagnosis, *, status: str = "done") -> None:
        """Store the diagnosis, its findings and proposed actions, and close the run."""
        self.db["runs"].update(run_id, {"finished_at": _now(), "status": status, "root_cause": diagnosis.root_cause,
                                        "confidence": diagnosis.confidence, "gpu_hours_lost": diagnosis.gpu_hours_lost,
                                        "diagnosis": diagnosis.model_dump_json()})
        self.db["findings"].insert_all(
            ({"run_id": run_id, "check": f.check, "root_cause": f.root_cause, "confidence": f.confidence,
              "culprits": json.dumps(f.culprits), "message": f.message} for f in diagnosis.findings))
        self.db["proposed_actions"].insert_all(
            ({"run_id": run_id, "type": a.spec.type, "params": a.spec.model_dump_json(exclude_none=True),
              "plan_hash": a.plan_hash, "commands": json.dumps(a.commands), "reversibility": a.reversibility}
             for a in diagnosis.proposed_actions))

    def fail_run(self, run_id: str, error: str) -> None:
        """Close a run that ended in an error."""
        self.db["runs"].update(run_id, {"finished_at": _now(), "status": f"error: {error[:500]}"})


class RunSummary(BaseModel):
    """One row of the ``runs`` table (times are ISO-8601 UTC strings as stored)."""

    id: str
    started_at: str
    finished_at: str | None = None
    target: str = ""
    question: str = ""
    model: str = ""
    status: str = ""
    """``running``, ``done``, ``partial`` or ``error: <why>``."""
    root_cause: str | None = None
    confidence: float | None = None
    gpu_hours_lost: float | None = None


_SUMMARY_COLUMNS = ", ".join(RunSummary.model_fields)


def _read_db(path: Path) -> sqlite_utils.Database | None:
    """The run store at ``path`` opened read-only, or None when there is none yet."""
    if not path.exists():
        return None
    return sqlite_utils.Database(sqlite3.connect(f"file:{path}?mode=ro", uri=True))


def list_runs(path: Path | None = None, *, limit: int = 20) -> list[RunSummary]:
    """The newest ``limit`` runs, newest first ([] when the store does not exist yet).

    Raises:
        sqlite3.DatabaseError: the file is not a SQLite database.
    """
    db = _read_db(Path(path) if path else default_db_path())
    if db is None or "runs" not in db.table_names():
        return []
    try:
        rows = db.execute(f"select {_SUMMARY_COLUMNS} from runs order by started_at desc limit ?", [limit]).fetchall()
    finally:
        db.conn.close()
    return [RunSummary(**dict(zip(RunSummary.model_fields, r))) for r in rows]


def find_run(ref: str, path: Path | None = None) -> tuple[RunSummary, Diagnosis | None]:
    """The run whose id is ``ref`` or starts with it (``last`` = the newest), and its Diagnosis if it finished.

    Raises:
        ConfigError: no such run, or the prefix names several (both list what to try).
    """
    from tools.errors import ConfigError

    store = Path(path) if path else default_db_path()
    db = _read_db(store)
    if db is None or "runs" not in db.table_names():
        raise ConfigError(f"{store}: no runs yet (run `warden diagnose PATH` first)")
    try:
        if ref == "last":
            rows = db.execute(f"select {_SUMMARY_COLUMNS}, diagnosis from runs order by started_at desc limit 1").fetchall()
        else:
            rows = db.execute(f"select {_SUMMARY_COLUMNS}, diagnosis from runs where id like ? escape '\\' limit 6",
                              [ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"]).fetchall()
    finally:
        db.conn.close()
    if not rows:
        raise ConfigError(f"no run {ref!r} in {store} (see `warden runs list`)")
    if len(rows) > 1:
        ids = ", ".join(r[0][:16] for r in rows[:5])
        raise ConfigError(f"run {ref!r} is ambiguous: {ids}{' ...' if len(rows) > 5 else ''}; give more characters")
    *summary, diagnosis = rows[0]
    run = RunSummary(**dict(zip(RunSummary.model_fields, summary)))
    return run, (Diagnosis.model_validate_json(diagnosis) if diagnosis else None)
