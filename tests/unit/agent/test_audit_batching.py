"""The audit log at scale: what a run reads is written in one transaction with what ends the run or
takes effect; what takes effect is written before append() returns; the chain stays verifiable; each
tool result is recorded as its hash, size and a bounded excerpt."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from agent.audit import AuditLog
from agent.deps import EXCERPT_CHARS
from agent.diagnose import diagnose_path

INCIDENT = Path(__file__).resolve().parents[3] / "evals" / "incidents" / "xid79-nccl-watchdog-other-rank"


def _rows(db: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT seq, kind FROM audit ORDER BY seq").fetchall()


def test_reads_wait_for_what_takes_effect_then_land_in_order(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    log = AuditLog(db)
    log.append("run_start", {"question": "q"}, run_id="r")
    log.append("tool_call", {"tool": "get_findings"}, run_id="r")
    assert _rows(db) == []  # read-only records are not written one by one
    log.append("policy_decision", {"decision": "needs_approval"}, run_id="r")
    assert _rows(db) == [(1, "run_start"), (2, "tool_call"), (3, "policy_decision")]  # before append() returned
    log.append("finding", {"root_cause": "healthy"}, run_id="r")
    log.append("run_end", {"status": "done"}, run_id="r")
    assert [k for _, k in _rows(db)][-2:] == ["finding", "run_end"]
    assert log.verify().ok


def test_another_writer_in_between_is_chained_around(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    a, b = AuditLog(db), AuditLog(db)
    provisional = a.append("tool_call", {"tool": "x"}, run_id="a")
    b.append("approval", {"event": "approved"}, run_id="b")
    a.flush()
    assert _rows(db) == [(1, "approval"), (2, "tool_call")]
    assert provisional.seq == 1  # as returned before b wrote: provisional, as documented
    assert AuditLog(db).verify().ok


def test_a_diagnosis_is_one_transaction_and_records_hashes_and_excerpts(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WARDEN_HOME", str(tmp_path / "home"))
    log = AuditLog(tmp_path / "audit.db")
    writes: list[str] = []
    log._db.conn.set_trace_callback(lambda sql: writes.append(sql) if sql.startswith("BEGIN IMMEDIATE") else None)
    diagnose_path(INCIDENT, audit=log)
    assert len(writes) == 1
    records = list(log.records())
    kinds = [r.kind for r in records]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end" and "tool_result" in kinds and "diagnosis" in kinds
    results = [r.payload for r in records if r.kind == "tool_result"]
    for p in results:
        assert len(p["result_sha256"]) == 64 and len(p["excerpt"]) <= EXCERPT_CHARS and p["result_chars"] > 0
    small = [p for p in results if p["result_chars"] <= EXCERPT_CHARS]
    assert small and all(hashlib.sha256(p["excerpt"].encode()).hexdigest() == p["result_sha256"] for p in small)
    assert any(p["result_chars"] > EXCERPT_CHARS for p in results)  # the big ones are cut, not stored whole
    assert log.verify().ok
