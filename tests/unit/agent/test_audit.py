"""The audit store on a real SQLite file: an untouched chain verifies; edited, deleted, inserted
and reordered rows are detected, also after an attacker drops the triggers and recomputes hashes
without the key (tests/adversarial/test_audit_tampering.py has the anchored cases)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from agent.audit import AuditIntegrityError, AuditLog, canonical_json
from agent.audit_chain import LEGACY_GENESIS as ZEROS

REPO = Path(__file__).resolve().parents[3]
T0 = datetime(2026, 3, 4, 10, 15, tzinfo=timezone.utc)
N = 6


class _Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    path = tmp_path / "audit.db"
    log = AuditLog(path, clock=_Clock())
    log.append("run_start", {"question": "Job 4242 has logged nothing for 40 minutes. Why?"}, run_id="run-1")
    log.append("tool_call", {"tool": "get_pending_jobs", "args": {"limit": 20}}, run_id="run-1")
    log.append("finding", {"root_cause": "gpu_hardware_fault", "culprits": ["node:gpu017"]}, run_id="run-1")
    log.append("policy_decision", {"action": "drain_node", "decision": "needs_approval"}, run_id="run-1")
    log.append("approval", {"id": "a1b2c3d4e5f6", "approver": "bob", "status": "approved"}, run_id="run-1")
    log.append("execution", {"argv": ["scontrol", "update", "NodeName=gpu017", "State=DRAIN"]}, run_id="run-1")
    log.close()
    return path


def tamper(db: Path, *statements: str, drop_triggers: bool = True) -> None:
    """Change the file the way an attacker with write access would: raw SQL, triggers gone."""
    with sqlite3.connect(db) as conn:
        if drop_triggers:
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
                conn.execute(f"DROP TRIGGER {name}")
        for sql in statements:
            conn.execute(sql)


def rows(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT seq, ts, kind, run_id, payload, prev_hash, hash FROM audit ORDER BY seq").fetchall()


def rehash(prev: str, seq: int, ts: str, kind: str, run_id: str | None, payload: str) -> str:
    """What an attacker without the key can compute: the plain SHA-256 of the row."""
    body = canonical_json({"seq": seq, "ts": ts, "kind": kind, "run_id": run_id, "payload": json.loads(payload)})
    return hashlib.sha256((prev + body).encode()).hexdigest()


def test_untouched_chain_verifies(db: Path) -> None:
    result = AuditLog(db).verify()
    assert result.ok, result.problem
    assert (result.rows_checked, result.head_seq, result.first_bad_seq) == (N, N, None)
    assert result.warnings == []


def test_empty_log_verifies(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "empty.db")
    result = log.verify()
    assert result.ok and result.head_seq == 0 and result.head_hash == log.head()[1] != ZEROS
    assert len(result.head_hash) == 64 and result.log_id == log.log_id()


def test_rows_are_chained_and_canonical(db: Path) -> None:
    table = rows(db)
    assert [r[0] for r in table] == list(range(1, N + 1))
    assert table[0][5] not in ("", ZEROS) and len(table[0][5]) == 64  # the log's own keyed genesis
    for prev, row in zip(table, table[1:]):
        assert row[5] == prev[6]
    assert table[1][4] == '{"args":{"limit":20},"tool":"get_pending_jobs"}'
    assert all(r[1].endswith("+00:00") for r in table)


def test_reopened_log_continues_the_chain(db: Path) -> None:
    rec = AuditLog(db).append("diagnosis", {"root_cause": "gpu_hardware_fault"}, run_id="run-1")
    assert rec.seq == N + 1 and rec.prev_hash == rows(db)[N - 1][6]
    assert AuditLog(db).verify().ok
    assert [r.seq for r in AuditLog(db).records(run_id="run-1", since_seq=5)] == [6, 7]


# ---- triggers: defence in depth ------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE audit SET payload = '{}' WHERE seq = 3",
        "DELETE FROM audit WHERE seq = 6",
        "DELETE FROM audit",
        f"INSERT INTO audit VALUES (3, 'x', 'finding', NULL, '{{}}', '{ZEROS}', 'h')",
        f"INSERT INTO audit VALUES (7, 'x', 'finding', NULL, '{{}}', '{ZEROS}', 'h')",
        "UPDATE audit_head SET seq = 3",
        "DELETE FROM audit_head",
        "DELETE FROM audit_meta",
        "UPDATE audit_meta SET log_id = 'x'",
    ],
)
def test_triggers_refuse_tampering(db: Path, sql: str) -> None:
    with pytest.raises(sqlite3.IntegrityError):
        tamper(db, sql, drop_triggers=False)
    assert AuditLog(db).verify().ok


# ---- tampering after dropping the triggers -------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "bad_seq"),
    [
        ("""UPDATE audit SET payload = '{"root_cause":"user_code_error","culprits":["node:gpu017"]}' WHERE seq = 3""", 3),
        ("""UPDATE audit SET payload = '{"culprits": ["node:gpu017"], "root_cause": "gpu_hardware_fault"}' WHERE seq = 3""", 3),
        ("UPDATE audit SET kind = 'diagnosis' WHERE seq = 2", 2),
        ("UPDATE audit SET ts = '2026-03-04T09:00:00.000000+00:00' WHERE seq = 4", 4),
        ("UPDATE audit SET run_id = 'run-2' WHERE seq = 5", 5),
        ("UPDATE audit SET run_id = NULL WHERE seq = 1", 1),
        # the first hex digit changed for certain ('f' || ... was a no-op 1 time in 16)
        ("UPDATE audit SET hash = (CASE WHEN hash LIKE 'f%' THEN '0' ELSE 'f' END) || substr(hash, 2) WHERE seq = 6", 6),
        ("UPDATE audit SET prev_hash = (CASE WHEN prev_hash LIKE 'f%' THEN '0' ELSE 'f' END) || substr(prev_hash, 2) "
         "WHERE seq = 2", 2),
    ],
)
def test_edited_row_detected(db: Path, sql: str, bad_seq: int) -> None:
    tamper(db, sql)
    result = AuditLog(db).verify()
    assert not result.ok
    assert result.first_bad_seq == bad_seq
    assert result.problem is not None and "\n" not in result.problem


def test_edited_row_with_recomputed_hash_is_caught_at_that_row(db: Path) -> None:
    seq, ts, kind, run_id, _, prev, _ = rows(db)[3]
    payload = '{"action":"drain_node","decision":"allow"}'
    tamper(db, f"UPDATE audit SET payload = '{payload}', hash = '{rehash(prev, seq, ts, kind, run_id, payload)}' WHERE seq = 4")
    result = AuditLog(db).verify()
    assert (result.ok, result.first_bad_seq) == (False, 4)  # without the key no hash verifies
    assert "hash mismatch" in (result.problem or "")


@pytest.mark.parametrize("seq", [1, 3, 5])
def test_deleted_row_detected(db: Path, seq: int) -> None:
    tamper(db, f"DELETE FROM audit WHERE seq = {seq}")
    result = AuditLog(db).verify()
    assert (result.ok, result.first_bad_seq) == (False, seq)
    assert "missing" in (result.problem or "")


def test_deleted_last_rows_detected_by_the_head(db: Path) -> None:
    tamper(db, "DELETE FROM audit WHERE seq >= 5")
    result = AuditLog(db).verify()
    assert (result.ok, result.first_bad_seq) == (False, 5)
    assert "missing at the end" in (result.problem or "")


def test_deleted_last_row_with_forged_head_caught_by_the_head_mac(db: Path) -> None:
    prev_hash = rows(db)[N - 2][6]
    tamper(db, f"DELETE FROM audit WHERE seq = {N}", f"UPDATE audit_head SET seq = {N - 1}, hash = '{prev_hash}'")
    result = AuditLog(db).verify()
    assert (result.ok, result.first_bad_seq) == (False, N) and "head's MAC" in (result.problem or "")
    with pytest.raises(AuditIntegrityError):
        AuditLog(db).append("execution", {"argv": ["true"]})


def test_deleted_last_row_with_an_old_copy_of_the_head_caught_by_the_anchor(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        old_head = conn.execute("SELECT seq, hash, mac FROM audit_head").fetchone()
    AuditLog(db).append("execution", {"argv": ["scontrol", "update", "NodeName=gpu018", "State=DRAIN"]})
    anchor = AuditLog(db).head()
    tamper(db, f"DELETE FROM audit WHERE seq = {N + 1}",
           "UPDATE audit_head SET seq = {}, hash = '{}', mac = '{}'".format(*old_head))
    assert AuditLog(db).verify().ok  # consistent in itself: only an outside anchor can tell
    result = AuditLog(db).verify(anchor=anchor)
    assert (result.ok, result.first_bad_seq) == (False, N + 1)
    assert "missing at the end" in (result.problem or "") and "truncated" in (result.problem or "")


def test_deleted_head_detected_and_append_refused(db: Path) -> None:
    tamper(db, "DROP TABLE audit_head")
    log = AuditLog(db)
    result = log.verify()
    assert not result.ok and "head" in (result.problem or "")
    with pytest.raises(AuditIntegrityError):
        log.append("tool_call", {"tool": "x"})


def test_inserted_row_in_the_middle_detected(db: Path) -> None:
    tamper(
        db,
        "UPDATE audit SET seq = seq + 100 WHERE seq >= 4",
        "UPDATE audit SET seq = seq - 99 WHERE seq >= 104",
        f"INSERT INTO audit VALUES (4, '2026-03-04T10:15:03.500000+00:00', 'approval', 'run-1', "
        f"'{{\"approver\":\"mallory\",\"status\":\"approved\"}}', '{rows(db)[2][6]}', 'forged')",
    )
    assert [r[0] for r in rows(db)] == list(range(1, N + 2))
    result = AuditLog(db).verify()
    assert (result.ok, result.first_bad_seq) == (False, 4)


def test_inserted_row_with_a_recomputed_hash_is_caught_at_that_row(db: Path) -> None:
    seq3 = rows(db)[2]
    payload = '{"approver":"mallory","status":"approved"}'
    ts = "2026-03-04T10:15:03.500000+00:00"
    forged = rehash(seq3[6], 4, ts, "approval", "run-1", payload)
    tamper(
        db,
        "UPDATE audit SET seq = seq + 101 WHERE seq >= 4",
        "UPDATE audit SET seq = seq - 100 WHERE seq >= 105",
        f"INSERT INTO audit VALUES (4, '{ts}', 'approval', 'run-1', '{payload}', '{seq3[6]}', '{forged}')",
    )
    result = AuditLog(db).verify()
    assert (result.ok, result.first_bad_seq) == (False, 4)


def test_appended_row_outside_the_log_detected(db: Path) -> None:
    last = rows(db)[-1]
    tamper(db, f"INSERT INTO audit VALUES (7, '2026-03-04T11:00:00.000000+00:00', 'execution', NULL, '{{}}', '{last[6]}', 'x')")
    result = AuditLog(db).verify()
    assert (result.ok, result.first_bad_seq) == (False, 7)


def test_swapped_rows_detected(db: Path) -> None:
    tamper(db, "UPDATE audit SET seq = 100 WHERE seq = 2", "UPDATE audit SET seq = 2 WHERE seq = 3", "UPDATE audit SET seq = 3 WHERE seq = 100")
    result = AuditLog(db).verify()
    assert (result.ok, result.first_bad_seq) == (False, 2)


def test_swapped_contents_keeping_seq_detected(db: Path) -> None:
    table = rows(db)
    a, b = table[3], table[4]
    tamper(
        db,
        f"UPDATE audit SET kind = '{b[2]}', payload = '{b[4]}', ts = '{b[1]}', hash = '{b[6]}' WHERE seq = 4",
        f"UPDATE audit SET kind = '{a[2]}', payload = '{a[4]}', ts = '{a[1]}', hash = '{a[6]}' WHERE seq = 5",
    )
    result = AuditLog(db).verify()
    assert (result.ok, result.first_bad_seq) == (False, 4)


def test_dropped_triggers_are_reported_and_restored(db: Path) -> None:
    tamper(db)
    log = AuditLog(db)
    result = log.verify()
    assert result.ok  # data intact ...
    assert any("audit_no_update" in w for w in result.warnings)  # ... but the tampering shows
    with pytest.raises(sqlite3.IntegrityError):
        tamper(db, "DELETE FROM audit WHERE seq = 1", drop_triggers=False)


# ---- input checks and concurrency ----------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "payload"),
    [("shell", {"x": 1}), ("tool_call", {"x": float("nan")}), ("tool_call", {"x": {1, 2}})],
)
def test_bad_records_refused(tmp_path: Path, kind: str, payload: dict) -> None:
    log = AuditLog(tmp_path / "a.db")
    with pytest.raises(ValueError):
        log.append(kind, payload)  # type: ignore[arg-type]
    assert log.head()[0] == 0


def test_concurrent_writers_keep_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    AuditLog(path)
    code = (
        "import sys; from agent.audit import AuditLog\n"
        "log = AuditLog(sys.argv[1])\n"
        "for i in range(40): log.append('tool_call', {'writer': sys.argv[2], 'i': i})\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), w], env=env) for w in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    result = AuditLog(path).verify()
    assert result.ok and result.rows_checked == 80


def test_verify_and_new_writers_while_another_writer_appends(tmp_path: Path) -> None:
    """Before: verify read the rows, then the head, and a row appended in between was reported as
    "rows N..N missing at the end" (every time under a busy writer); opening a log took the write
    lock, so a second writer failed with "database is locked ... move it aside"."""
    import threading
    import time

    path = tmp_path / "busy.db"
    seed = AuditLog(path)
    for i in range(200):
        seed.append("tool_call", {"i": i})
    seed.close()
    stop, errors = threading.Event(), []

    def writer() -> None:
        log = AuditLog(path)
        try:
            while not stop.is_set():
                log.append("policy_decision", {"w": 1})
                time.sleep(0.001)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
        log.close()

    def opener() -> None:
        try:
            while not stop.is_set():
                log = AuditLog(path)
                log.append("tool_call", {"w": 2})  # the first deferred record checks head against last row
                log.close()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=writer), threading.Thread(target=opener)]
    for t in threads:
        t.start()
    try:
        results = [AuditLog(path).verify() for _ in range(5)]
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert errors == [] and [r.problem for r in results if not r.ok] == []
    assert AuditLog(path).verify().ok
